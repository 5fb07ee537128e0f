// Built-in scenarios. Text is split into words and each distinct word is a
// token (the vocabulary is the visible mapping); requests run through
// their lifecycle with two in flight at a time, so locks overlap.

/** Vocab maps words to token ids (1, 2, ...) and back. */
export class Vocab {
  constructor() { this.ids = new Map(); this.words = ['']; }
  id(w) { let k = this.ids.get(w); if (k === undefined) { k = this.words.length; this.ids.set(w, k); this.words.push(w); } return k; }
  encode(text) { return text.split(/\s+/).filter(Boolean).map((w) => this.id(w)); }
  word(t) { return this.words[t] ?? `#${t}`; }
}

// A small deterministic generator (xorshift32).
function rng(seed) { let x = seed >>> 0 || 1; return () => { x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0; return x / 4294967296; }; }
const LEX = ('the a cache prefix token page tree node lock slot evict host device copy match insert split leaf root tenant agent tool call '
  + 'result plan step query answer user system prompt chat turn reply model layer batch queue warm cold hit miss write back through load '
  + 'store fetch rank score file search code test run build fix read note list sort merge join map key value hash block').split(' ');
const words = (r, n) => Array.from({ length: n }, () => LEX[Math.floor(r() * LEX.length)]).join(' ');

/** pipeline turns requests into events with `width` requests in flight. */
export function pipeline(reqs, width = 2) {
  const ev = [];
  for (let i = 0; i < reqs.length + width; i++) {
    if (i < reqs.length) ev.push({ t: 'arrive', req: i, name: reqs[i].name, ns: reqs[i].ns, tokens: reqs[i].tokens });
    if (i < reqs.length) ev.push({ t: 'prefill', req: i, name: reqs[i].name });
    const f = i - width + 1;
    if (f >= 0 && f < reqs.length) ev.push({ t: 'finish', req: f, name: reqs[f].name });
  }
  return ev;
}

function chat() {
  const v = new Vocab(); const r = rng(7);
  const system = 'system: you are a helpful assistant . answer briefly and cite the cache docs when you can .';
  const reqs = [];
  const convs = [0, 1, 2].map(() => ({ history: system }));
  for (let turn = 0; turn < 4; turn++) {
    for (let c = 0; c < convs.length; c++) {
      const prompt = `${convs[c].history} user: ${words(r, 3 + (c + turn) % 3)} ?`;
      reqs.push({ name: `chat ${c + 1} turn ${turn + 1}`, ns: {}, tokens: v.encode(prompt) });
      convs[c].history = `${prompt} assistant: ${words(r, 4)} .`;
    }
  }
  return { name: 'chat', title: 'Chat turns sharing a system prompt', vocab: v,
    settings: { page_size: 2, capacity: 120, host_capacity: 0, policy: 'lru' }, script: pipeline(reqs) };
}

function agents() {
  const v = new Vocab(); const r = rng(11);
  const tools = `tools: ${Array.from({ length: 6 }, (_, k) => `tool${k} takes ${words(r, 5)} and returns ${words(r, 3)} ;`).join(' ')}`;
  const reqs = [];
  const runs = [0, 1, 2].map((a) => ({ ctx: `${tools} task${a}: ${words(r, 4)}` }));
  for (let step = 0; step < 4; step++) {
    for (let a = 0; a < runs.length; a++) {
      reqs.push({ name: `agent ${a + 1} step ${step + 1}`, ns: {}, tokens: v.encode(runs[a].ctx) });
      runs[a].ctx += ` call tool${(a + step) % 6} -> ${words(r, 5)}`;
    }
  }
  return { name: 'agents', title: 'Agents with a long tool prompt', vocab: v,
    settings: { page_size: 4, capacity: 170, host_capacity: 320, write_policy: 'write_through', transfer_delay: 2, policy: 'lru' },
    script: pipeline(reqs) };
}

function tenants() {
  const v = new Vocab(); const r = rng(5);
  const shared = 'policy: summarise the ticket below in one line .';
  const reqs = [];
  const tickets = Array.from({ length: 5 }, () => words(r, 5));
  for (const k of [0, 1, 2, 3, 4, 0, 1]) {
    for (const t of ['acme', 'globex']) {
      reqs.push({ name: `${t} ticket ${k + 1}`, ns: { cache_salt: t }, tokens: v.encode(`${shared} ticket: ${tickets[k]} ${t === 'acme' ? 'short' : 'long'}`) });
    }
  }
  return { name: 'tenants', title: 'Two tenants with different salts', vocab: v,
    settings: { page_size: 2, capacity: 48, host_capacity: 56, write_policy: 'write_back', policy: 'lru' }, script: pipeline(reqs) };
}

/** bulk is an n-request numeric scenario (the benchmark): 20 shared prefixes, random suffixes. */
export function bulk(n = 2000, seed = 3) {
  const r = rng(seed);
  const prefixes = Array.from({ length: 20 }, (_, k) => Array.from({ length: 64 + 16 * (k % 5) }, (_, j) => 1 + k * 1000 + j));
  const reqs = [];
  for (let i = 0; i < n; i++) {
    const p = prefixes[Math.floor(r() * r() * prefixes.length)];
    const tail = Array.from({ length: 8 + Math.floor(r() * 40) }, () => 50000 + Math.floor(r() * 5000));
    reqs.push({ name: `r${i}`, ns: {}, tokens: p.concat(tail) });
  }
  return { name: 'bulk', title: `${n} requests, 20 shared prefixes`, vocab: null,
    settings: { page_size: 16, capacity: 4096, host_capacity: 8192, write_policy: 'write_back', policy: 'lru', audit: false }, script: pipeline(reqs) };
}

export const scenarios = { chat, agents, tenants, bulk: () => bulk(2000) };
