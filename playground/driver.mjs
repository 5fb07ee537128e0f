// The controller: the host duties of host/native's Controller (see
// host/native/controller.go and controller_host.go) for a Full-attention
// tree with an optional host tier, over the mock pools of pools.mjs.
//
// The tree decides, the controller executes: it matches and locks on
// arrival, allocates device slots (evicting through the tree when short),
// inserts through resumable inserts and executes every action the tree
// hands back, backs nodes up to the host (write-through on insert,
// write-back on eviction with demote or drop), loads host-only prefixes
// back on arrival and makes host room with evict_host. Every slot it fills
// carries a canary record and every match is checked against it.
//
// Asynchronous mode (transferDelay > 0) follows the protocol a real host
// with copy engines uses: a write-through backup is committed, its node
// locked and marked pending, and the copy lands and is acknowledged
// (finish_write_through, unlock) transferDelay ticks later; a load-back is
// committed and its copy lands and finishes (finish_load_back, unlocks)
// later, while its request waits. A request whose match reaches device
// slots a load-back is still filling waits for it too. Write-back backups
// at eviction stay synchronous: the device slots are freed right after.
import { ACTIONS, COMPONENTS } from '../abi/js/codec.mjs';
import { Pool, PoolError, SLOT_BYTES, canarySeed, canaryStep, canaryRecord, sameRecord } from './pools.mjs';
import { EngineError } from './engine.mjs';

/** ExhaustedError: the device pool cannot serve an allocation even after evicting all it may. */
export class ExhaustedError extends Error {}
/** CanaryError: a match handed back slots whose bytes are not that prefix's. */
export class CanaryError extends Error {}

export const ACTION_NAMES = Object.fromEntries(Object.entries(ACTIONS).map(([k, v]) => [v, k]));
const COMP_NAMES = ['full', 'swa', 'mamba'];

/** meaning explains an action in one line. */
export function meaning(a) {
  const n = a.slots.length; const c = COMP_NAMES[a.component] ?? a.component;
  switch (a.kind) {
    case ACTIONS.free_device_kv: return `free ${n} incoming device slot(s) the tree already held (duplicate KV)`;
    case ACTIONS.free_device_kv_full_only: return `free ${n} Full slot(s) only; their SWA side was released earlier`;
    case ACTIONS.backup_kv: return `back up ${a.nodes.length || 1} node(s) device → host, ancestors first`;
    case ACTIONS.replace_write_through_on_split: return `a node with write-through ${a.ack} in flight was split: track both halves`;
    case ACTIONS.free_device_slots: return `evict node ${a.node}: free its ${n} device ${c} slot(s)`;
    case ACTIONS.free_host_slots: return `free ${n} host ${c} slot(s) of node ${a.node}`;
    case ACTIONS.swa_rebuild: return `node ${a.node} has SWA data again over ${n} slot(s)`;
    case ACTIONS.recover_swa_with_locked_full: return `SWA tombstone ${a.node} takes the request's SWA data`;
    case ACTIONS.mamba_evict_excess_path_states: return `too many Mamba states on the path of ${a.node}: evict the excess`;
    case ACTIONS.rebuild_full_to_swa_mapping: return `map ${n} loaded SWA slot(s) under node ${a.node}`;
  }
  return `action kind ${a.kind}`;
}

export const emptyStats = () => ({
  requests: 0, finished: 0, input_tokens: 0, matched_tokens: 0, computed_tokens: 0, freed_slots: 0,
  evicted_nodes: 0, evicted_tokens: 0, canary_checked: 0, canary_mismatches: 0,
  host_hit_tokens: 0, load_backs: 0, loaded_tokens: 0, load_backs_skipped: 0, backups: 0, backed_up_tokens: 0,
  write_throughs: 0, backups_refused: 0, demoted: 0, dropped: 0, host_evictions: 0, host_freed_slots: 0,
  bytes_moved: 0, waits: 0,
});

/**
 * Controller runs the request lifecycle over engine (an Engine from
 * engine.mjs) and pools ({device, host}: Pools; host only with a host
 * tier). opts: {canary: true, transferDelay: 0, log: null}. log, when a
 * function, receives one entry per engine call and per transfer:
 * {op, text, actions: [{kind, name, meaning, node}], nodes: [ids]}.
 */
export class Controller {
  constructor(engine, pools, opts = {}) {
    const cfg = engine.config;
    if (cfg.components.length !== 1 || cfg.components[0] !== COMPONENTS.full) {
      throw new Error('the playground controller runs Full-attention trees (components [full]); SWA and Mamba pools are not simulated');
    }
    if (cfg.bigram) throw new Error('the playground controller does not run bigram trees');
    if (!(pools.device instanceof Pool)) throw new Error('the device pool is required');
    if (cfg.host_tier && !(pools.host instanceof Pool)) throw new Error('the tree has a host tier, so a host pool is required');
    if (cfg.host_tier && pools.host === pools.device) throw new Error('the host pool is the device pool');
    this.eng = engine; this.kv = pools.device; this.host = cfg.host_tier ? pools.host : null;
    this.page = cfg.page_size; this.writeBack = cfg.write_policy === 1;
    this.canary = opts.canary ?? true;
    this.delay = Math.max(0, Math.floor(opts.transferDelay ?? 0));
    this.log = opts.log ?? null;
    this.stats = emptyStats();
    this.owned = 0; this.live = new Set(); this.ack = 0; this.now = 0;
    this.held = cfg.host_tier ? new Uint8Array(pools.host.capacity) : null; // host slots the tree holds
    this.transfers = []; // async copies in flight
    this.loading = new Map(); // device slot -> load-back transfer filling it
    this.rec = new Uint8Array(SLOT_BYTES);
    this.nextRid = 1;
    this.setLog(this.log);
  }

  /** setLog replaces the log function (null: no logging, the fast path). */
  setLog(fn) {
    this.log = fn;
    this.eng.onCall = fn ? (op, body, m) => this.logCall(op, body, m) : null;
  }

  // --- logging ---
  logCall(op, body, m) {
    const nodes = [];
    for (const k of ['node', 'anchor']) if (body[k] && body[k] !== '0') nodes.push(String(body[k]));
    if (body.nodes) nodes.push(...body.nodes.map(String));
    const actions = (m.actions ?? []).map((a) => {
      if (a.node !== '0') nodes.push(a.node);
      for (const x of a.nodes) nodes.push(x);
      return { kind: a.kind, name: ACTION_NAMES[a.kind], meaning: meaning(a), node: a.node };
    });
    let text = op;
    if (m.status !== 0) text += ` → error: ${m.message}`;
    else if (op === 'match') { text += ` ${body.tokens.length} tokens → ${m.indices.length} on device`; if (m.host_hit_len) text += `, ${m.host_hit_len} more on host`; nodes.push(m.last_device); }
    else if (op === 'lock' || op === 'host_lock') text += ` node ${body.node} (receipt ${m.receipt.serial}, ${m.receipt.delta} tokens newly protected)`;
    else if (op === 'unlock' || op === 'host_unlock') text += ` node ${body.node}`;
    else if (op === 'begin_insert' || op === 'resume_insert') { text += ` ${body.tokens ? body.tokens.length + ' tokens, ' : ''}${m.done ? `done: ${m.result.prefix_len} already cached of ${m.result.total_len}` : 'paused at a barrier'}`; if (m.done) nodes.push(m.result.last_device); }
    else if (op === 'evict' || op === 'evict_host') text += ` want ${body.want} → freed ${m.freed}`;
    else if (op === 'evict_next') text += m.done ? ' → walk done' : ` → node ${m.node}, freed ${m.freed}`;
    else if (op === 'evict_start') text += ` want ${body.want}`;
    else if (op === 'load_back') text += ` anchor ${body.anchor}: ${m.plan.full.reduce((s, e) => s + e.slots.length, 0)} tokens on host${m.plan.pinned ? ' (pinned)' : ''}`;
    else if (op === 'backup_spec') text += ` node ${body.node}: ${m.spec.full ? m.spec.full.length : 0} tokens to copy`;
    else if (op === 'demote') text += ` node ${body.node}: device copy freed, host copy kept`;
    else if (op === 'drop_subtree_no_host') text += ` node ${body.node}: ${m.dropped ? 'dropped' : 'kept (locked)'}`;
    else if (op === 'mark_write_through_pending' || op === 'finish_write_through') text += ` ack ${body.ack} (${body.nodes.length} node(s))`;
    else if (op === 'commit_backup' || op === 'commit_load_back' || op === 'finish_load_back') text += ` ${body.node ?? body.anchor}`;
    else if (op === 'stats' || op === 'take_events' || op === 'sanity_check_ongoing' || op === 'nodes' || op === 'inspect') return; // bookkeeping, not worth a line
    this.log({ op, text, actions, nodes });
  }

  note(op, text, nodes = []) { if (this.log) this.log({ op, text, actions: [], nodes }); }

  // --- actions ---
  execute(acts) {
    let first = null;
    for (const a of acts) {
      try { this.executeOne(a); } catch (e) { first ??= e; }
    }
    if (first) throw first;
  }

  executeOne(a) {
    switch (a.kind) {
      case ACTIONS.free_device_kv: case ACTIONS.free_device_kv_full_only:
        return this.freeDevice(a.slots);
      case ACTIONS.free_device_slots:
        if (a.component !== COMPONENTS.full) throw new Error(`${meaning(a)}: no ${COMP_NAMES[a.component]} device pool`);
        return this.freeDevice(a.slots);
      case ACTIONS.free_host_slots: return this.freeHost(a);
      case ACTIONS.backup_kv: return this.backupChain(a.nodes);
      case ACTIONS.replace_write_through_on_split: return this.replaceOnSplit(a);
    }
    throw new Error(`${ACTION_NAMES[a.kind] ?? a.kind}: needs SWA or Mamba pools, which the playground does not simulate`);
  }

  freeDevice(slots) {
    if (!slots.length) return;
    this.kv.free(slots);
    this.stats.freed_slots += slots.length;
  }

  freeHost(a) {
    if (!this.host) throw new Error(`${meaning(a)}: no host tier`);
    for (const s of a.slots) if (!this.held[s]) throw new Error(`${meaning(a)}: host slot ${s} is not held by the tree`);
    this.host.free(a.slots);
    for (const s of a.slots) this.held[s] = 0;
    this.stats.freed_slots += a.slots.length; this.stats.host_freed_slots += a.slots.length;
  }

  replaceOnSplit(a) {
    const t = this.transfers.find((x) => x.kind === 'write_through' && x.ack === Number(a.ack));
    if (!t) throw new Error(`${meaning(a)}: no write-through with that ack is in flight`);
    const k = t.nodes.indexOf(a.nodes[0]);
    if (k < 0) throw new Error(`${meaning(a)}: node ${a.nodes[0]} is not in its list`);
    t.nodes.splice(k, 1, a.nodes[1], a.nodes[2]);
  }

  // --- allocation and eviction ---
  alignedAtoms(n) { return Math.floor(n / this.page) * this.page; }

  ensure(n) {
    const avail = this.kv.available;
    if (avail >= n) return;
    const st = this.eng.call('stats');
    const evictable = Number(st.evictable[0]);
    if (avail + evictable < n) {
      throw new ExhaustedError(`${n} KV slots needed, ${avail} free and ${evictable} evictable of ${this.kv.capacity}; ${st.protected[0]} locked by running requests and ${this.owned} owned by them`);
    }
    if (this.host) return this.evictSteps(n);
    const m = this.eng.call('evict', { component: 0, want: BigInt(n - avail) });
    for (const a of m.actions) if (a.kind === ACTIONS.free_device_slots && a.component === 0) this.stats.evicted_nodes++;
    this.stats.evicted_tokens += Number(m.freed);
    this.execute(m.actions);
  }

  evictSteps(n) {
    for (let round = 0; this.kv.available < n && round < 4; round++) {
      const before = this.kv.available;
      this.eng.call('evict_start', { component: 0, want: BigInt(n - before) });
      let err = null;
      try {
        while (this.kv.available < n) {
          const st = this.eng.call('evict_next');
          if (st.done) break;
          this.executeEviction(st.actions);
        }
      } catch (e) { err = e; }
      this.eng.call('evict_end');
      if (err) throw err;
      if (this.kv.available === before) break;
    }
    if (this.kv.available < n) throw new ExhaustedError(`${n} KV slots needed, ${this.kv.available} free after evicting (the rest is locked or could not be demoted)`);
  }

  executeEviction(acts) {
    let first = null;
    for (const a of acts) {
      try {
        if (a.kind === ACTIONS.backup_kv) {
          for (const id of (a.nodes.length ? a.nodes : [a.node]).slice()) this.evictToHost(id);
          continue;
        }
        if (a.kind === ACTIONS.free_device_slots && a.component === 0) { this.stats.evicted_nodes++; this.stats.evicted_tokens += a.slots.length; }
        this.executeOne(a);
      } catch (e) { first ??= e; }
    }
    if (first) throw first;
  }

  evictToHost(id) {
    const { ok } = this.backupNode(id, false);
    if (ok) {
      const m = this.eng.call('demote', { node: id });
      if (m.actions.length) this.stats.demoted++;
      return this.executeEviction(m.actions);
    }
    this.stats.backups_refused++;
    const m = this.eng.call('drop_subtree_no_host', { node: id });
    if (m.dropped) this.stats.dropped++;
    this.executeEviction(m.actions);
  }

  // --- the host tier ---
  hostRoom(n) {
    const avail = this.host.available;
    if (avail >= n) return true;
    if (n > this.host.capacity) return false;
    this.stats.host_evictions++;
    const m = this.eng.call('evict_host', { component: 0, want: BigInt(n - avail) });
    this.execute(m.actions);
    return this.host.available >= n;
  }

  /**
   * backupNode copies node's device data without a host copy to the host
   * and commits it; with defer the byte copies are returned instead of
   * made (an asynchronous write-through lands them later).
   */
  backupNode(id, defer) {
    let spec;
    for (let attempt = 0; ; attempt++) {
      spec = this.eng.call('backup_spec', { node: id }).spec;
      if (!spec.full || spec.full.length === 0) return { ok: true, full: false, copies: [] };
      if (this.host.available >= spec.full.length) break;
      if (attempt === 3 || !this.hostRoom(spec.full.length)) return { ok: false, full: false, copies: [] };
    }
    const dst = this.host.alloc(spec.full.length);
    const copies = spec.full.map((src, k) => [dst[k], src]);
    if (!defer) this.copyToHost(copies);
    try {
      this.eng.call('commit_backup', { node: id, full: dst, swa: [], mamba: -1 });
    } catch (e) {
      this.host.free(dst);
      throw e;
    }
    for (const s of dst) this.held[s] = 1;
    this.stats.backups++; this.stats.backed_up_tokens += dst.length;
    return { ok: true, full: true, copies };
  }

  copyToHost(copies) { for (const [d, s] of copies) this.stats.bytes_moved += this.host.copyFrom(d, this.kv, s); }
  copyToDevice(copies) { for (const [d, s] of copies) this.stats.bytes_moved += this.kv.copyFrom(d, this.host, s); }

  backupChain(chain) {
    for (const id of chain.slice()) {
      const async = this.delay > 0 && !this.writeBack;
      const { ok, full, copies } = this.backupNode(id, async);
      if (!ok) { this.stats.backups_refused++; return; }
      if (this.writeBack || !full) continue;
      this.writeThrough(id, copies);
    }
  }

  writeThrough(id, copies) {
    const rc = this.eng.call('lock', { node: id }).receipt;
    const ack = ++this.ack;
    const nodes = this.eng.call('mark_write_through_pending', { nodes: [id], ack: BigInt(ack) }).nodes.slice();
    const t = { kind: 'write_through', id, ack, nodes, rc, copies, due: this.now + this.delay, tokens: copies.length };
    if (this.delay > 0) { this.transfers.push(t); this.note('transfer', `write-through ack ${ack}: ${copies.length} token(s) of node ${id} in flight for ${this.delay} step(s)`, [id]); return; }
    this.finishWriteThrough(t);
  }

  finishWriteThrough(t) {
    this.copyToHost(t.copies);
    this.eng.call('finish_write_through', { nodes: t.nodes, ack: BigInt(t.ack) });
    this.stats.write_throughs++;
    this.eng.call('unlock', { node: t.id, receipt: t.rc, skip_swa: false });
  }

  /**
   * loadBack brings anchor's host-only prefix back to the device under a
   * host lock and a device lock on anchor. It returns false (skipped),
   * true (loaded) or, in asynchronous mode, the transfer in flight.
   */
  loadBack(anchor) {
    const hr = this.eng.call('host_lock', { node: anchor }).receipt;
    let rc;
    try { rc = this.eng.call('lock', { node: anchor }).receipt; } catch (e) { this.eng.call('host_unlock', { node: anchor, receipt: hr }); throw e; }
    const t = { kind: 'load_back', anchor, hr, rc, copies: [], due: this.now + this.delay, tokens: 0, waiters: [] };
    let r;
    try { r = this.loadBackLocked(t); } catch (e) { this.releaseLoadBack(t); throw e; }
    if (r && this.delay > 0) {
      for (const [d] of t.copies) this.loading.set(d, t);
      this.transfers.push(t);
      this.note('transfer', `load-back of ${t.tokens} token(s) to node ${anchor} in flight for ${this.delay} step(s)`, [anchor]);
      return t;
    }
    if (r) this.finishLoadBack(t);
    else this.releaseLoadBack(t);
    return r;
  }

  releaseLoadBack(t) {
    this.eng.call('unlock', { node: t.anchor, receipt: t.rc, skip_swa: false });
    this.eng.call('host_unlock', { node: t.anchor, receipt: t.hr });
  }

  loadBackLocked(t) {
    const anchor = t.anchor;
    let plan = this.eng.call('load_back', { anchor }).plan;
    const atoms = (p) => p.full.reduce((s, e) => s + e.slots.length, 0);
    if (plan.pinned || atoms(plan) === 0) { this.stats.load_backs_skipped++; return false; }
    try { this.ensure(atoms(plan)); } catch (e) {
      if (e instanceof ExhaustedError) { this.stats.load_backs_skipped++; return false; }
      throw e;
    }
    plan = this.eng.call('load_back', { anchor }).plan;
    const need = atoms(plan);
    if (plan.pinned || need === 0 || this.kv.available < need) { this.stats.load_backs_skipped++; return false; }
    const full = plan.full.map((e) => this.kv.alloc(e.slots.length));
    plan.full.forEach((e, k) => e.slots.forEach((s, j) => t.copies.push([full[k][j], s])));
    if (this.delay === 0) this.copyToDevice(t.copies);
    let m;
    try { m = this.eng.call('commit_load_back', { anchor, full, swa: [], mamba: -1 }); } catch (e) {
      this.kv.free(full.flat());
      throw e;
    }
    this.execute(m.actions);
    t.tokens = need;
    this.stats.load_backs++; this.stats.loaded_tokens += need;
    return true;
  }

  finishLoadBack(t) {
    if (this.delay > 0) { this.copyToDevice(t.copies); for (const [d] of t.copies) this.loading.delete(d); }
    this.eng.call('finish_load_back', { anchor: t.anchor });
    this.releaseLoadBack(t);
  }

  // --- the request lifecycle ---
  /**
   * arrive matches tokens in ns and locks the matched prefix; with a host
   * tier a host-only continuation is loaded back first. It returns the
   * request; in asynchronous mode it may be waiting (req.ready false)
   * until tick completes the transfers it needs.
   */
  arrive(ns, tokens) {
    const req = { rid: this.nextRid++, ns, tokens: tokens.slice(), slots: [], ready: false, done: false, wait: null,
      first: -1, hostHit: 0, protected: 0, cached: 0, last: '0', rcpt: null, hash: null, tried: false };
    this.stats.requests++; this.stats.input_tokens += tokens.length;
    this.tryArrive(req);
    return req;
  }

  tryArrive(req) {
    let m = this.eng.call('match', { namespace: req.ns, tokens: req.tokens });
    this.execute(m.actions);
    const busy = this.waitingOn(m.indices);
    if (busy) { req.wait = busy; busy.waiters.push(req); this.stats.waits++; return false; }
    if (req.first < 0) req.first = m.indices.length;
    if (this.host && m.best !== m.last_device && !req.tried) {
      req.tried = true;
      const r = this.loadBack(m.best);
      if (r && r !== true) { req.wait = r; r.waiters.push(req); return false; }
      if (r) {
        m = this.eng.call('match', { namespace: req.ns, tokens: req.tokens });
        this.execute(m.actions);
      }
    }
    req.hostHit = Math.max(m.indices.length - req.first, 0);
    this.stats.host_hit_tokens += req.hostHit;
    req.slots = m.indices.slice();
    if (this.canary) req.hash = this.verify(req);
    const rc = this.eng.call('lock', { node: m.last_device }).receipt;
    req.last = m.last_device; req.rcpt = rc;
    req.protected = req.cached = m.indices.length;
    req.ready = true; req.wait = null;
    this.live.add(req);
    this.stats.matched_tokens += req.cached - req.hostHit;
    return true;
  }

  waitingOn(slots) {
    if (this.loading.size === 0) return null;
    for (const s of slots) { const t = this.loading.get(s); if (t) return t; }
    return null;
  }

  /** verify checks the request's matched slots against the canary and returns the prefix hash. */
  verify(req) {
    let h = canarySeed(req.ns); let bad = 0; let firstBad = -1;
    for (let i = 0; i < req.slots.length; i++) {
      h = canaryStep(h, req.tokens[i]);
      canaryRecord(this.rec, h, i);
      if (!sameRecord(this.kv.read(req.slots[i]), this.rec)) { bad++; if (firstBad < 0) firstBad = i; }
    }
    this.stats.canary_checked += req.slots.length;
    if (bad) {
      this.stats.canary_mismatches += bad;
      throw new CanaryError(`canary: ${bad} of ${req.slots.length} matched slots hold the wrong bytes (first at position ${firstBad}, slot ${req.slots[firstBad]})`);
    }
    return h;
  }

  usable(req) {
    if (!req || req.done) throw new Error('the request is done');
    if (!req.ready) throw new Error(`request ${req.rid} is waiting for a transfer`);
  }

  /** prefill gives fresh slots to the request's uncomputed tokens (all of them by default). */
  prefill(req, n = req.tokens.length - req.slots.length) {
    this.usable(req);
    if (n < 0 || n > req.tokens.length - req.slots.length) throw new Error(`prefill of ${n} tokens, ${req.tokens.length - req.slots.length} pending`);
    if (n === 0) return;
    this.ensure(n);
    const start = req.slots.length;
    this.kv.alloc(n, req.slots);
    this.owned += n; this.stats.computed_tokens += n;
    if (this.canary) {
      let h = req.hash;
      for (let i = start; i < req.slots.length; i++) {
        h = canaryStep(h, req.tokens[i]);
        this.kv.write(req.slots[i], canaryRecord(this.rec, h, i));
      }
      req.hash = h;
    }
    this.note('prefill', `request ${req.rid}: ${n} token(s) computed into fresh device slots`, []);
  }

  /** finish caches the request's page-aligned computed prefix, frees its ragged tail and releases its lock. */
  finish(req) {
    this.usable(req);
    const computed = req.slots.length;
    const upto = computed;
    let step = this.eng.call('begin_insert', { namespace: req.ns, tokens: req.tokens.slice(0, upto), slots: req.slots.slice(0, upto),
      prev_prefix_len: Math.min(req.protected, this.alignedAtoms(upto)) });
    for (;;) {
      this.execute(step.actions);
      if (step.done) break;
      step = this.eng.call('resume_insert');
    }
    const from = Math.max(step.result.total_len, req.protected);
    this.freeDevice(req.slots.slice(from, computed));
    this.eng.call('unlock', { node: req.last, receipt: req.rcpt, skip_swa: false });
    this.owned -= computed - req.protected;
    req.done = true; this.live.delete(req);
    this.stats.finished++;
  }

  /** tick advances the clock and completes the transfers due; it returns the requests that became ready. */
  tick() {
    this.now++;
    const due = this.transfers.filter((t) => t.due <= this.now);
    if (!due.length) return [];
    this.transfers = this.transfers.filter((t) => t.due > this.now);
    const ready = [];
    for (const t of due) {
      if (t.kind === 'write_through') {
        this.note('transfer', `write-through ack ${t.ack} landed: ${t.tokens} token(s) on host, acknowledged`, t.nodes);
        this.finishWriteThrough(t);
      } else {
        this.note('transfer', `load-back to node ${t.anchor} landed: ${t.tokens} token(s) on device`, [t.anchor]);
        this.finishLoadBack(t);
        for (const r of t.waiters) if (this.tryArrive(r)) ready.push(r);
      }
    }
    return ready;
  }

  /** inFlight lists, for sanity_check_ongoing, the pending write-through nodes and load-back anchors. */
  inFlight() {
    const wt = []; const lb = [];
    for (const t of this.transfers) { if (t.kind === 'write_through') wt.push(...t.nodes); else lb.push(t.anchor); }
    return { write_through: wt, load_back: lb };
  }

  /**
   * audit runs the tree's sanity check (with the transfers in flight) and
   * checks the pools: the device slots in use are the tree's plus those the
   * running requests own, and the host slots in use are the tree's.
   */
  audit() {
    const o = this.inFlight();
    this.eng.call('sanity_check_ongoing', { write_through: o.write_through, load_back: o.load_back });
    const st = this.eng.call('stats');
    const tree = Number(st.evictable[0]) + Number(st.protected[0]);
    if (tree + this.owned !== this.kv.inUse) throw new Error(`device pool: ${this.kv.inUse} slots in use, the tree holds ${tree} and requests own ${this.owned}`);
    if (this.host) {
      let held = 0; for (const b of this.held) held += b;
      if (held !== this.host.inUse) throw new Error(`host pool: ${this.host.inUse} slots in use, the tree holds ${held}`);
    }
  }
}

export { PoolError, EngineError };
