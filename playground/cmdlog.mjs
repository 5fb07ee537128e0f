// Parses a command log written by `radixkv record` (cmd/radixkv/log.go:
// "radixkv-log 1", "set NAME VALUE" lines, "req ..." lines, "end N T").

export class LogError extends Error {}

function b64tokens(s) {
  if (s === '-') return [];
  const bin = atob(s); const n = bin.length;
  if (n % 4) throw new LogError(`token run of ${n} bytes is not a whole number of uint32s`);
  const out = new Array(n / 4);
  for (let i = 0; i < n; i += 4) out[i / 4] = (bin.charCodeAt(i) | bin.charCodeAt(i + 1) << 8 | bin.charCodeAt(i + 2) << 16 | bin.charCodeAt(i + 3) << 24) >>> 0;
  return out;
}

// Go's strconv.Quote for the printable strings tenants are; JSON reads it.
function unquote(s, line) {
  try { return JSON.parse(s); } catch { throw new LogError(`line ${line}: namespace ${s} is not a quoted string`); }
}

/** parseLog returns {settings, requests: [{tokens, ns, output}], source}. */
export function parseLog(text) {
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  if (lines[0] !== 'radixkv-log 1') throw new LogError('not a radixkv command log (the first line must be "radixkv-log 1")');
  const set = {}; const reqs = []; let ended = false; let tokens = 0;
  for (let i = 1; i < lines.length; i++) {
    const l = lines[i]; const no = i + 1;
    if (l === '' || l.startsWith('#')) continue;
    if (ended) throw new LogError(`line ${no}: data after the end line`);
    const f = l.split(' ');
    if (f[0] === 'set') { set[f[1]] = f.slice(2).join(' '); continue; }
    if (f[0] === 'end') {
      if (Number(f[1]) !== reqs.length || Number(f[2]) !== tokens) throw new LogError(`line ${no}: end says ${f[1]} requests and ${f[2]} tokens, the log has ${reqs.length} and ${tokens}`);
      ended = true; continue;
    }
    if (f[0] !== 'req' || f.length < 8) throw new LogError(`line ${no}: want "req TIMESTAMP OUTPUT INPUT REF SHARED TOKENS NAMESPACE"`);
    const [, , out, inLen, ref, shared, toks] = f; const ns = unquote(f.slice(7).join(' '), no);
    const k = Number(ref), sh = Number(shared);
    let prompt = [];
    if (sh > 0) {
      if (!(k >= 0 && k < reqs.length)) throw new LogError(`line ${no}: reference ${ref} is not an earlier request`);
      if (sh > reqs[k].tokens.length) throw new LogError(`line ${no}: shares ${sh} tokens of a ${reqs[k].tokens.length}-token prompt`);
      prompt = reqs[k].tokens.slice(0, sh);
    }
    prompt = prompt.concat(b64tokens(toks));
    if (prompt.length !== Number(inLen)) throw new LogError(`line ${no}: prompt of ${prompt.length} tokens, input length says ${inLen}`);
    tokens += prompt.length;
    reqs.push({ tokens: prompt, ns: ns ? { cache_salt: ns } : {}, output: Number(out) });
  }
  if (!ended) throw new LogError('the log has no end line (truncated?)');
  return { settings: set, requests: reqs, source: set.source ?? '' };
}

/** outputToken is the id of the j-th decoded token of request k, as radixkv replay --output-tokens makes it. */
export const outputToken = (k, j) => ((2 ** 31) + ((k * 65536 + j) % (2 ** 31))) >>> 0;

/**
 * logScenario turns a parsed log into a scenario: requests one at a time,
 * as replay runs them (arrive, prefill, decode when the log or opts say
 * output-tokens, finish).
 */
export function logScenario(log, name = 'log', opts = {}) {
  const s = log.settings;
  const settings = {};
  if (s.components) settings.components = s.components;
  for (const [k, v] of [['swa-window', 'swa_window'], ['swa-capacity', 'swa_capacity'], ['mamba-chunk', 'mamba_chunk'], ['mamba-cap', 'mamba_cap'], ['mamba-capacity', 'mamba_capacity']]) {
    if (s[k]) settings[v] = Number(s[k]);
  }
  if (s['page-size']) settings.page_size = Number(s['page-size']);
  if (s.capacity) settings.capacity = Number(s.capacity);
  if (s['host-capacity']) settings.host_capacity = Number(s['host-capacity']);
  if (s.policy) settings.policy = s.policy;
  if (s['write-policy']) settings.write_policy = s['write-policy'];
  const decode = opts.outputTokens ?? s['output-tokens'] === 'true';
  const script = [];
  log.requests.forEach((r, i) => {
    const nm = `req ${i}`;
    script.push({ t: 'arrive', req: i, name: nm, ns: r.ns, tokens: r.tokens }, { t: 'prefill', req: i, name: nm });
    if (decode && r.output > 0) script.push({ t: 'decode', req: i, name: nm, tokens: Array.from({ length: r.output }, (_, j) => outputToken(i, j)) });
    script.push({ t: 'finish', req: i, name: nm });
  });
  return { name, title: `Command log (${log.requests.length} requests${decode ? ', decoding' : ''})`, vocab: null, settings, script };
}
