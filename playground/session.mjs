// A session: a deterministic list of steps over one cache instance, its
// pools and a controller. Each step runs one event of a script (a
// request's arrive, prefill or finish, or a manual operation), after the
// asynchronous transfers due at that step have landed; a step whose
// request still waits for a transfer only advances the clock. Stepping
// back replays the script from the start on a fresh instance (everything
// is deterministic), so no state needs to be undone.
import { Engine } from './engine.mjs';
import { Pool } from './pools.mjs';
import { Controller, ExhaustedError, emptyStats } from './driver.mjs';

/** defaults are the settings a session uses for what it is not told. */
export const defaults = Object.freeze({
  page_size: 4, policy: 'lru', capacity: 256, host_capacity: 0, write_policy: 'write_through',
  components: 'full', swa_window: 8, swa_capacity: 0, mamba_chunk: 0, mamba_cap: 0, mamba_capacity: 0,
  transfer_delay: 0, kv_events: true, canary: true, audit: true,
});

/** configOf is the create op's config for settings. */
export function configOf(s) {
  const comps = componentsOf(s.components);
  return { page_size: s.page_size, components: comps, policy: s.policy, bigram: false, host_tier: s.host_capacity > 0,
    write_policy: s.write_policy === 'write_back' ? 1 : 0, write_through_threshold: 0, kv_events: !!s.kv_events, hash_convention: 0,
    swa_window: comps.includes(1) ? s.swa_window : 0, mamba_chunk_size: comps.includes(2) ? s.mamba_chunk : 0,
    mamba_max_path_states: comps.includes(2) ? s.mamba_cap : 0 };
}

/** componentsOf parses a component set: full, full,swa, full,mamba or full,swa,mamba. */
export function componentsOf(names = 'full') {
  const ids = { full: 0, swa: 1, mamba: 2 };
  const out = String(names).split(',').map((x) => x.trim()).filter(Boolean).map((x) => {
    if (!(x in ids)) throw new Error(`component ${x}: want full, swa or mamba`);
    return ids[x];
  });
  if (!out.includes(0)) throw new Error('the component set needs full');
  return out;
}

export class Session {
  /** guest: a codec Guest (wasi.mjs); script: events; settings as defaults. opts.log: keep step logs (default true). */
  constructor(guest, settings, script, opts = {}) {
    this.guest = guest; this.settings = { ...defaults, ...settings }; this.script = script;
    this.keepLog = opts.log ?? true; this.eng = null;
    this.reset();
  }

  reset() {
    if (this.eng) this.eng.destroy();
    const s = this.settings;
    this.eng = Engine.create(this.guest, configOf(s));
    const comps = componentsOf(s.components);
    this.pools = { device: new Pool('device', s.capacity), host: s.host_capacity > 0 ? new Pool('host', s.host_capacity) : null,
      swa: comps.includes(1) ? new Pool('swa', s.swa_capacity || s.capacity) : null,
      mamba: comps.includes(2) ? new Pool('mamba', s.mamba_capacity || Math.floor(s.capacity / s.page_size) + 2) : null };
    if (this.pools.host && comps.includes(1)) this.pools.hostSwa = new Pool('host swa', s.host_capacity);
    if (this.pools.host && comps.includes(2)) this.pools.hostMamba = new Pool('host mamba', Math.floor(s.host_capacity / s.page_size) + 2);
    this.entries = null;
    this.ctl = new Controller(this.eng, this.pools, { canary: s.canary, transferDelay: s.transfer_delay,
      log: this.keepLog ? (e) => this.entries.push(this.named(e)) : null });
    this.pos = 0; this.steps = 0; this.reqs = new Map(); this.manual = []; this.manualReqs = []; this.lastMatch = null; this.lastBest = null;
    this.hits = []; this.errors = 0; this.cache = null; this.dirty = null; this.aliases = new Map();
  }

  /**
   * alias names a node as core does (slot.generation, e.g. n3.1: what
   * core's renderer and transcripts print): a wire id is the core id with
   * the instance's tag (abi/dispatch's Tag of the handle) in its high word.
   */
  alias(id) {
    let a = this.aliases.get(id);
    if (a === undefined) {
      let h = this.eng.handle >>> 0;
      h ^= h >>> 16; h = Math.imul(h, 0x85ebca6b) >>> 0; h ^= h >>> 13; h = Math.imul(h, 0xc2b2ae35) >>> 0; h ^= h >>> 16;
      const core = BigInt(id) ^ (BigInt(h >>> 0) << 32n);
      a = `n${Number(core & 0xffffffffn) - 1}.${Number(core >> 32n)}`;
      this.aliases.set(id, a);
    }
    return a;
  }

  named(e) {
    const re = /\b\d{10,}\b/g;
    e.text = e.text.replace(re, (id) => this.alias(id));
    for (const a of e.actions) a.meaning = a.meaning.replace(re, (id) => this.alias(id));
    return e;
  }

  get done() { return this.pos >= this.script.length && this.ctl.transfers.length === 0; }

  /** step runs one step and returns its record, or null when the session is done. */
  step() {
    if (this.done) return null;
    this.entries = [];
    const rec = { step: ++this.steps, label: '', kind: 'event', error: null, entries: this.entries, events: [], touched: [] };
    try {
      this.ctl.tick();
      const ev = this.script[this.pos];
      const req = ev && ev.req !== undefined && ev.t !== 'arrive' ? this.reqs.get(ev.req) : null;
      if (!ev) { rec.kind = 'drain'; rec.label = `script done; transfers still in flight: ${this.ctl.transfers.length}`; }
      else if (req && !req.ready && !req.done) {
        rec.kind = 'wait'; rec.label = `${ev.name ?? 'request ' + ev.req} waits for a transfer (due at step ${req.wait ? req.wait.due : '?'})`;
      } else {
        try { rec.label = this.run(ev, rec); this.pos++; } catch (e) {
          // Short of device room while transfers in flight hold locks: the
          // request waits for them, as a scheduler would queue it.
          if (!(e instanceof ExhaustedError) || ev.t !== 'prefill' || this.ctl.transfers.length === 0) { this.pos++; throw e; }
          rec.kind = 'wait'; rec.label = `${ev.name ?? 'request ' + ev.req} waits for device room (transfers in flight hold locks)`;
        }
      }
      if (this.settings.audit) this.ctl.audit();
    } catch (e) {
      rec.error = e.message; this.errors++;
    }
    if (this.settings.kv_events) {
      try { rec.events = this.eng.call('take_events').events; } catch (e) { rec.error ??= e.message; }
    }
    for (const e of this.entries) for (const n of e.nodes) if (n !== '0' && !rec.touched.includes(n)) rec.touched.push(n);
    if (!this.ctl.log || rec.error) this.cache = null; // untracked changes: the next snapshot reads everything
    else if (this.dirty) for (const n of rec.touched) this.dirty.add(n);
    rec.stats = { ...this.ctl.stats }; rec.inflight = this.ctl.transfers.length;
    return rec;
  }

  run(ev, rec) {
    const ctl = this.ctl; const name = ev.name ?? (ev.req !== undefined ? `request ${ev.req}` : 'request');
    switch (ev.t) {
      case 'arrive': {
        const r = ctl.arrive(ev.ns ?? {}, ev.tokens);
        this.reqs.set(ev.req, r);
        return r.ready ? `${name} arrives: ${r.cached} of ${ev.tokens.length} tokens cached${r.hostHit ? ` (${r.hostHit} loaded back from host)` : ''}`
          : `${name} arrives: waits for a load-back`;
      }
      case 'prefill': case 'decode': case 'finish': {
        const r = this.reqs.get(ev.req);
        if (!r || r.done) return `${name}: skipped (${r ? 'it ended with an error' : 'it never arrived'})`;
        if (ev.t === 'prefill') { const n = r.tokens.length - r.slots.length; ctl.prefill(r); return `${name} prefills ${n} tokens`; }
        if (ev.t === 'decode') { for (const t of ev.tokens) ctl.extend(r, t); return `${name} decodes ${ev.tokens.length} tokens (one extend each)`; }
        ctl.finish(r);
        this.hits.push({ step: this.steps, rate: this.hitRate() });
        return `${name} finishes: cached, lock released`;
      }
      case 'request': { // a whole lifecycle in one step
        const r = ctl.arrive(ev.ns ?? {}, ev.tokens);
        if (!r.ready) { this.reqs.set(ev.req ?? `m${this.steps}`, r); return `${name} arrives: waits for a load-back`; }
        ctl.prefill(r); ctl.finish(r);
        this.hits.push({ step: this.steps, rate: this.hitRate() });
        return `${name}: ${r.cached} of ${ev.tokens.length} tokens were cached`;
      }
      case 'insert': {
        const res = ctl.insertFresh(ev.ns ?? {}, ev.tokens);
        return `insert ${ev.tokens.length} tokens: ${res.prefix_len} were cached already, ${res.total_len - res.prefix_len} added`;
      }
      case 'arrive_m': { // a manual request, kept running until finish_m
        const r = ctl.arrive(ev.ns ?? {}, ev.tokens); r.name = `typed request ${r.rid}`;
        this.manualReqs.push(r);
        return r.ready ? `${r.name} arrives: ${r.cached} of ${ev.tokens.length} tokens cached, prefix locked` : `${r.name} arrives: waits for a load-back`;
      }
      case 'prefill_m': case 'finish_m': {
        const r = [...this.manualReqs].reverse().find((x) => !x.done && x.ready);
        if (!r) return `${ev.t === 'prefill_m' ? 'prefill' : 'finish'}: no typed request is running (arrive one first)`;
        if (ev.t === 'prefill_m') { const n = r.tokens.length - r.slots.length; ctl.prefill(r); return `${r.name} prefills ${n} tokens`; }
        ctl.finish(r); this.manualReqs = this.manualReqs.filter((x) => x !== r);
        this.hits.push({ step: this.steps, rate: this.hitRate() });
        return `${r.name} finishes: cached, lock released`;
      }
      case 'backup': {
        if (!ctl.host) return 'backup: no host tier (set host tokens above 0)';
        const node = this.lastMatch; if (!node || node === this.eng.call('stats').root) return 'backup: match a cached prefix first';
        const path = []; for (let cur = node; cur !== '0';) { const i = this.eng.call('inspect', { node: cur }).info; if (i.parent === '0') break; path.push(cur); cur = i.parent; }
        ctl.backupChain(path.reverse());
        return `backup of node ${this.alias(node)} and its ancestors to the host`;
      }
      case 'load_back': {
        if (!ctl.host) return 'load back: no host tier (set host tokens above 0)';
        if (!this.lastBest || this.lastBest === this.lastMatch) return 'load back: the last match found nothing on the host only';
        const r = ctl.loadBack(this.lastBest);
        const nm = this.alias(this.lastBest);
        return r === true ? `load-back to node ${nm} done` : r ? `load-back to node ${nm} in flight` : 'load-back skipped (pinned, empty or no device room)';
      }
      case 'match': {
        const m = this.eng.call('match', { namespace: ev.ns ?? {}, tokens: ev.tokens });
        ctl.execute(m.actions); this.lastMatch = m.last_device; this.lastBest = m.best;
        return `match: ${m.indices.length} of ${ev.tokens.length} tokens on device${m.host_hit_len ? `, ${m.host_hit_len} more on host` : ''}`;
      }
      case 'lock': {
        const node = this.lastMatch ?? '0';
        const rc = this.eng.call('lock', { node }).receipt; this.manual.push({ node, rc });
        return `lock node ${this.alias(node)}: receipt ${rc.serial}`;
      }
      case 'unlock': {
        const l = this.manual.pop();
        if (!l) return 'unlock: no manual lock is held';
        this.eng.call('unlock', { node: l.node, receipt: l.rc, skip_swa: false });
        return `unlock node ${this.alias(l.node)}`;
      }
      case 'evict': {
        const m = this.eng.call('evict', { component: 0, want: BigInt(ev.n) });
        ctl.executeEviction(0, m.actions);
        return `evict ${ev.n}: freed ${m.freed} tokens`;
      }
      case 'evict_host': {
        if (!ctl.host) return 'evict host: no host tier';
        const m = this.eng.call('evict_host', { component: 0, want: BigInt(ev.n) });
        ctl.execute(m.actions);
        return `evict host ${ev.n}: freed ${m.freed} tokens`;
      }
    }
    throw new Error(`unknown event ${ev.t}`);
  }

  hitRate() {
    const s = this.ctl.stats;
    return s.input_tokens ? (s.matched_tokens + s.host_hit_tokens) / s.input_tokens : 0;
  }

  /** runTo replays from the start to step n (0: the fresh instance), without logs when quiet. */
  runTo(n) {
    const keep = this.keepLog; this.keepLog = false; this.reset();
    while (this.steps < n && !this.done) this.step();
    this.keepLog = keep;
    if (keep) this.ctl.setLog((e) => this.entries.push(this.named(e)));
  }

  /** receipts counts the live receipts the host holds per node. */
  receipts() {
    const out = {};
    const add = (n) => { out[n] = (out[n] ?? 0) + 1; };
    for (const r of this.ctl.live) add(r.last);
    for (const t of this.ctl.transfers) if (t.kind === 'load_back') add(t.anchor); // its host lock
    for (const l of this.manual) add(l.node);
    for (const t of this.ctl.transfers) add(t.kind === 'write_through' ? t.id : t.anchor);
    return out;
  }

  /**
   * snapshot describes the tree for rendering: every node with its
   * residency and locks. It is incremental: only the nodes the steps since
   * the last snapshot touched, their ancestors, new nodes and their
   * children, and the parents of removed nodes are inspected again (every
   * inspect allocates in the module, whose collector then pauses); full
   * re-reads every node. The Node tests check it against full snapshots
   * after every step.
   */
  snapshot(full = false) {
    const eng = this.eng; const saved = eng.onCall; eng.onCall = null;
    try {
      const ids = eng.call('nodes').nodes;
      const st = eng.call('stats');
      if (full || !this.cache || this.cacheRoot !== st.root) { this.cache = new Map(); this.cacheRoot = st.root; this.dirty = new Set(); }
      const cache = this.cache; const live = new Set(ids);
      const read = (id) => {
        const i = eng.call('inspect', { node: id }).info; const c = i.components[0];
        const sw = i.components[1]; const mb = i.components[2];
        const n = { id, parent: i.parent, children: i.children, tokens: i.key.length, key: i.key.slice(0, 6), ns: i.namespace.cache_salt || i.namespace.extra_key,
          device: c.device ? c.device.length : 0, host: c.host ? c.host.length : 0, lock: c.lock, host_lock: c.host_lock,
          swa: this.pools.swa ? (sw.device ? sw.device.length : -1) : null, mamba: this.pools.mamba ? !!(mb.device && mb.device.length) : null,
          hits: Number(i.hits), pending: i.write_through_pending !== '0', pinned: i.pinned_by !== '0' };
        cache.set(id, n); return n;
      };
      const dirty = this.dirty; this.dirty = new Set();
      for (const [id, n] of cache) if (!live.has(id)) { cache.delete(id); dirty.add(n.parent); }
      for (const id of ids) if (!cache.has(id)) dirty.add(id);
      const done = new Set();
      const refresh = (id) => {
        // The node and its path to the root, as the tree is now.
        for (let cur = id; cur && cur !== '0' && live.has(cur) && !done.has(cur);) {
          done.add(cur);
          const old = cache.get(cur); const n = read(cur);
          if (!old || old.children.join() !== n.children.join()) for (const k of n.children) if (!done.has(k)) { done.add(k); read(k); }
          cur = n.parent;
        }
      };
      for (const id of dirty) refresh(id);
      const p = this.pools;
      return { root: st.root, nodes: ids.map((id) => ({ ...cache.get(id), name: this.alias(id) })), receipts: this.receipts(),
        pools: [{ name: 'device full', cap: p.device.capacity, used: p.device.inUse },
          ...(p.swa ? [{ name: 'device swa', cap: p.swa.capacity, used: p.swa.inUse }] : []),
          ...(p.mamba ? [{ name: 'device mamba', cap: p.mamba.capacity, used: p.mamba.inUse }] : []),
          ...(p.host ? [{ name: 'host full', cap: p.host.capacity, used: p.host.inUse }] : []),
          ...(p.hostSwa ? [{ name: 'host swa', cap: p.hostSwa.capacity, used: p.hostSwa.inUse }] : []),
          ...(p.hostMamba ? [{ name: 'host mamba', cap: p.hostMamba.capacity, used: p.hostMamba.inUse }] : [])],
        transfers: this.ctl.transfers.map((t) => ({ kind: t.kind, node: t.kind === 'write_through' ? t.id : t.anchor, due: t.due, tokens: t.tokens })),
        stats: { ...this.ctl.stats }, steps: this.steps, total: this.script.length, pos: this.pos, done: this.done, hits: this.hits.slice() };
    } finally { eng.onCall = saved; }
  }
}

export { emptyStats };
