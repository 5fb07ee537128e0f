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
  write_throughs: 0, backups_refused: 0, demoted: 0, dropped: 0, host_evictions: 0, host_freed_slots: 0, host_freed_tokens: 0,
  bytes_moved: 0, waits: 0,
  swa_window_freed: 0, swa_early_releases: 0, swa_evicted: 0, mamba_forks: 0, mamba_donated: 0, mamba_evicted: 0, chunk_finishes: 0,
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
    const comps = new Set(cfg.components);
    if (!comps.has(COMPONENTS.full)) throw new Error('the tree needs the full component');
    if (cfg.bigram) throw new Error('the playground controller does not run bigram trees');

    if (!(pools.device instanceof Pool)) throw new Error('the device pool is required');
    if (cfg.host_tier && !(pools.host instanceof Pool)) throw new Error('the tree has a host tier, so a host pool is required');
    if (cfg.host_tier && pools.host === pools.device) throw new Error('the host pool is the device pool');
    this.eng = engine; this.kv = pools.device; this.host = cfg.host_tier ? pools.host : null;
    this.page = cfg.page_size; this.writeBack = cfg.write_policy === 1;
    // Hybrid trees: SWA slots mapped under Full slots, Mamba states per request.
    this.swa = null; this.mamba = null; this.ownedSWA = 0; this.ownedMamba = 0; this.mapped = 0; this.grid = 0;
    if (comps.has(COMPONENTS.swa)) {
      if (!(pools.swa instanceof Pool)) throw new Error('the tree has the swa component, so an SWA pool is required');
      this.swa = pools.swa; this.window = cfg.swa_window; this.winPages = Math.ceil(this.window / this.page) * this.page;
      this.swaOf = new Int32Array(this.kv.capacity).fill(-1);
    }
    if (comps.has(COMPONENTS.mamba)) {
      if (!(pools.mamba instanceof Pool)) throw new Error('the tree has the mamba component, so a Mamba pool is required');
      this.mamba = pools.mamba;
      const chunk = cfg.mamba_chunk_size > 0 ? cfg.mamba_chunk_size : this.page;
      let g = chunk, b = this.page; while (b) [g, b] = [b, g % b];
      this.grid = (chunk / g) * this.page;
    }
    this.canary = opts.canary ?? true;
    this.delay = Math.max(0, Math.floor(opts.transferDelay ?? 0));
    this.log = opts.log ?? null;
    this.stats = emptyStats();
    this.owned = 0; this.live = new Set(); this.ack = 0; this.now = 0;
    // Host pools per component and the host slots the tree holds in each.
    this.hostPools = [this.host, null, null]; this.devPools = [this.kv, this.swa, this.mamba];
    if (this.host) {
      if (this.swa) { if (!(pools.hostSwa instanceof Pool)) throw new Error('the tree has SWA and a host tier, so a host SWA pool is required'); this.hostPools[1] = pools.hostSwa; }
      if (this.mamba) { if (!(pools.hostMamba instanceof Pool)) throw new Error('the tree has Mamba and a host tier, so a host Mamba pool is required'); this.hostPools[2] = pools.hostMamba; }
    }
    this.held = this.hostPools.map((p) => (p ? new Uint8Array(p.capacity) : null));
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
      case ACTIONS.free_device_kv: return this.freeKV(a.slots, true);
      case ACTIONS.free_device_kv_full_only: return this.freeKV(a.slots, false);
      case ACTIONS.free_device_slots:
        if (a.component === COMPONENTS.full) return this.freeKV(a.slots, false);
        if (a.component === COMPONENTS.swa && this.swa) { this.stats.swa_evicted += a.slots.length; return this.freeSWAOf(a.slots); }
        if (a.component === COMPONENTS.mamba && this.mamba) { this.stats.mamba_evicted += a.slots.length; return this.freePool(this.mamba, a.slots); }
        throw new Error(`${meaning(a)}: no ${COMP_NAMES[a.component]} device pool`);
      case ACTIONS.free_host_slots: return this.freeHost(a);
      case ACTIONS.backup_kv: return this.backupChain(a.nodes);
      case ACTIONS.replace_write_through_on_split: return this.replaceOnSplit(a);
      case ACTIONS.swa_rebuild: return this.checkMapped(a);
      case ACTIONS.recover_swa_with_locked_full: this.remap(a); return this.freeKV(a.incoming, false);
      case ACTIONS.rebuild_full_to_swa_mapping: return this.rebuild(a);
      case ACTIONS.mamba_evict_excess_path_states: {
        if (!this.mamba) break;
        const m = this.eng.call('evict_excess_path_states', { node: a.node });
        return this.execute(m.actions);
      }
    }
    throw new Error(`${ACTION_NAMES[a.kind] ?? a.kind}: not executable here (${meaning(a)})`);
  }

  // --- the Full → SWA slot mapping ---
  needSWA(a) { if (!this.swa) throw new Error(`${meaning(a)}: needs the full-to-SWA slot mapping`); }
  checkMapped(a) {
    this.needSWA(a);
    for (const f of a.slots) if (this.swaOf[f] < 0) throw new Error(`SWARebuild: full slot ${f} maps to no SWA slot`);
  }
  remap(a) {
    this.needSWA(a);
    if (a.slots.length !== a.incoming.length) throw new Error(`RecoverSWAWithLockedFull: ${a.slots.length} kept slots for ${a.incoming.length} incoming`);
    a.slots.forEach((k, i) => {
      if (this.swaOf[a.incoming[i]] < 0) throw new Error(`RecoverSWAWithLockedFull: incoming full slot ${a.incoming[i]} maps to no SWA slot`);
      if (this.swaOf[k] >= 0) throw new Error(`RecoverSWAWithLockedFull: kept full slot ${k} still maps to an SWA slot`);
    });
    a.slots.forEach((k, i) => { this.swaOf[k] = this.swaOf[a.incoming[i]]; this.swaOf[a.incoming[i]] = -1; });
  }

  freePool(p, slots) { if (!slots.length) return; p.free(slots); this.stats.freed_slots += slots.length; }

  /** freeKV frees Full slots; withSWA also the SWA slots they map to (each must map to one). */
  freeKV(slots, withSWA) {
    if (!this.swa || !slots.length) return this.freeDevice(slots);
    const sw = []; let bad = null;
    for (const f of slots) {
      const x = this.swaOf[f];
      if (x >= 0) { sw.push(x); if (!withSWA) bad ??= `full-only free of full slot ${f}, which still maps to SWA slot ${x} (freed as well)`; }
      else if (withSWA) bad ??= `free of full slot ${f} with its SWA side, but it maps to no SWA slot`;
    }
    this.freeDevice(slots);
    for (const f of slots) if (this.swaOf[f] >= 0) { this.swaOf[f] = -1; this.mapped--; }
    this.freePool(this.swa, sw);
    if (bad) throw new Error(`SWA mapping: ${bad}`);
  }

  /** freeSWAOf frees the SWA slots of Full slots that stay (an SWA eviction, a window slide). */
  freeSWAOf(full) {
    const sw = []; let bad = null;
    for (const f of full) { const x = this.swaOf[f]; if (x < 0) bad ??= `SWA free of full slot ${f}, which maps to no SWA slot`; else sw.push(x); }
    this.freePool(this.swa, sw);
    for (const f of full) if (this.swaOf[f] >= 0) { this.swaOf[f] = -1; this.mapped--; }
    if (bad) throw new Error(`SWA mapping: ${bad}`);
  }

  freeDevice(slots) {
    if (!slots.length) return;
    this.kv.free(slots);
    this.stats.freed_slots += slots.length;
  }

  freeHost(a) {
    const p = this.hostPools[a.component]; const held = this.held[a.component];
    if (!p) throw new Error(`${meaning(a)}: no ${COMP_NAMES[a.component]} host pool`);
    for (const x of a.slots) if (!held[x]) throw new Error(`${meaning(a)}: ${COMP_NAMES[a.component]} host slot ${x} is not held by the tree`);
    p.free(a.slots);
    for (const x of a.slots) held[x] = 0;
    this.stats.freed_slots += a.slots.length; this.stats.host_freed_slots += a.slots.length;
    if (a.component === COMPONENTS.full) this.stats.host_freed_tokens += a.slots.length;
  }

  /** rebuild maps each loaded Full slot to the SWA slot a load-back filled (RebuildFullToSWAMapping). */
  rebuild(a) {
    this.needSWA(a);
    if (a.slots.length !== a.incoming.length) throw new Error(`RebuildFullToSWAMapping: ${a.slots.length} full slots for ${a.incoming.length} SWA slots`);
    for (const f of a.slots) if (this.swaOf[f] >= 0) throw new Error(`RebuildFullToSWAMapping: full slot ${f} already maps to an SWA slot`);
    a.slots.forEach((f, k) => { this.swaOf[f] = a.incoming[k]; });
    this.mapped += a.slots.length;
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

  ensure(n, comp = COMPONENTS.full) {
    const p = [this.kv, this.swa, this.mamba][comp];
    const avail = p.available;
    if (avail >= n) return;
    const st = this.eng.call('stats');
    const evictable = Number(st.evictable[comp]);
    if (avail + evictable < n) {
      const owned = [this.owned, this.ownedSWA, this.ownedMamba][comp];
      throw new ExhaustedError(`${n} ${['KV', 'SWA', 'Mamba state'][comp]} slots needed, ${avail} free and ${evictable} evictable of ${p.capacity}; ${st.protected[comp]} locked by running requests and ${owned} owned by them`);
    }
    if (this.host) return this.evictSteps(comp, p, n);
    const m = this.eng.call('evict', { component: comp, want: BigInt(n - avail) });
    for (const a of m.actions) if (a.kind === ACTIONS.free_device_slots && a.component === 0) this.stats.evicted_nodes++;
    if (comp === COMPONENTS.full) this.stats.evicted_tokens += Number(m.freed);
    this.execute(m.actions);
  }

  /** alloc appends n Full slots to dst (each mapped to a fresh SWA slot in SWA trees), evicting first. */
  alloc(dst, n) {
    this.ensure(n);
    if (!this.swa) return this.kv.alloc(n, dst);
    this.ensure(n, COMPONENTS.swa);
    const k = dst.length;
    this.kv.alloc(n, dst);
    let sw;
    try { sw = this.swa.alloc(n); } catch (e) { this.kv.free(dst.splice(k)); throw e; }
    sw.forEach((x, j) => { this.swaOf[dst[k + j]] = x; });
    this.mapped += n;
    return dst;
  }

  evictSteps(comp, p, n) {
    for (let round = 0; p.available < n && round < 4; round++) {
      const before = p.available;
      this.eng.call('evict_start', { component: comp, want: BigInt(n - before) });
      let err = null;
      try {
        while (p.available < n) {
          const st = this.eng.call('evict_next');
          if (st.done) break;
          this.executeEviction(comp, st.actions);
        }
      } catch (e) { err = e; }
      this.eng.call('evict_end');
      if (err) throw err;
      if (p.available === before) break;
    }
    if (p.available < n) throw new ExhaustedError(`${n} ${COMP_NAMES[comp]} slots needed, ${p.available} free after evicting (the rest is locked or could not be demoted)`);
  }

  executeEviction(comp, acts) {
    let first = null;
    for (const a of acts) {
      try {
        if (a.kind === ACTIONS.backup_kv) {
          for (const id of (a.nodes.length ? a.nodes : [a.node]).slice()) this.evictToHost(comp, id);
          continue;
        }
        if (a.kind === ACTIONS.free_device_slots && a.component === 0) {
          this.stats.evicted_nodes++;
          if (comp === COMPONENTS.full) this.stats.evicted_tokens += a.slots.length;
        }
        this.executeOne(a);
      } catch (e) { first ??= e; }
    }
    if (first) throw first;
  }

  evictToHost(comp, id) {
    const { ok } = this.backupNode(id, false);
    if (ok) {
      const m = this.eng.call('demote', { node: id });
      if (m.actions.length) this.stats.demoted++;
      return this.executeEviction(comp, m.actions);
    }
    this.stats.backups_refused++;
    const m = this.eng.call('drop_subtree_no_host', { node: id });
    if (m.dropped) this.stats.dropped++;
    this.executeEviction(comp, m.actions);
  }

  // --- the host tier ---
  hostRoom(comp, n) {
    const p = this.hostPools[comp];
    const avail = p.available;
    if (avail >= n) return true;
    if (n > p.capacity) return false;
    this.stats.host_evictions++;
    const m = this.eng.call('evict_host', { component: comp, want: BigInt(n - avail) });
    this.execute(m.actions);
    return p.available >= n;
  }

  /**
   * backupNode copies node's device data without a host copy (Full, the
   * SWA runs of the window above it, its Mamba state) to the host and
   * commits it; with defer the byte copies are returned instead of made
   * (an asynchronous write-through lands them later).
   */
  backupNode(id, defer) {
    let spec; let need;
    for (let attempt = 0; ; attempt++) {
      spec = this.eng.call('backup_spec', { node: id }).spec;
      need = [spec.full ? spec.full.length : 0, spec.swa.reduce((k, e) => k + e.slots.length, 0), spec.mamba >= 0 ? 1 : 0];
      if (!spec.full && spec.swa.length === 0 && spec.mamba < 0) return { ok: true, full: false, copies: [] };
      let fits = true;
      need.forEach((n, c) => {
        if (n > 0 && !this.hostPools[c]) throw new Error(`backup of ${id} copies ${COMP_NAMES[c]} data, but there is no ${COMP_NAMES[c]} host pool`);
        if (n > 0 && this.hostPools[c].available < n) fits = false;
      });
      if (fits) break;
      if (attempt === 3) return { ok: false, full: false, copies: [] };
      for (let c = 0; c < 3; c++) if (need[c] > 0 && !this.hostRoom(c, need[c])) return { ok: false, full: false, copies: [] };
    }
    const dst = [[], [], []];
    try { need.forEach((n, c) => { if (n > 0) this.hostPools[c].alloc(n, dst[c]); }); } catch (e) {
      dst.forEach((d, c) => { if (d.length) this.hostPools[c].free(d); });
      throw e;
    }
    const copies = [];
    const H = this.hostPools;
    if (spec.full) spec.full.forEach((src, k) => copies.push([H[0], dst[0][k], this.kv, src]));
    const swaLists = []; let off = 0;
    for (const e of spec.swa) {
      const list = dst[1].slice(off, off + e.slots.length); off += e.slots.length; swaLists.push(list);
      e.slots.forEach((f, j) => {
        const x = this.swaOf[f];
        if (x < 0) throw new Error(`SWA mapping: backup of SWA data over full slot ${f} of ${e.node}, which maps to no SWA slot`);
        copies.push([H[1], list[j], this.swa, x]);
      });
    }
    if (spec.mamba >= 0) copies.push([H[2], dst[2][0], this.mamba, spec.mamba]);
    if (!defer) this.copy(copies);
    try {
      this.eng.call('commit_backup', { node: id, full: spec.full ? dst[0] : null, swa: swaLists, mamba: spec.mamba >= 0 ? dst[2][0] : -1 });
    } catch (e) {
      dst.forEach((d, c) => { if (d.length) this.hostPools[c].free(d); });
      throw e;
    }
    dst.forEach((d, c) => { for (const x of d) this.held[c][x] = 1; });
    this.stats.backups++; this.stats.backed_up_tokens += need[0];
    return { ok: true, full: !!spec.full, copies };
  }

  /** copy runs [toPool, dst, fromPool, src] slot copies. */
  copy(copies) { for (const [to, d, from, x] of copies) this.stats.bytes_moved += to.copyFrom(d, from, x); }

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
    const t = { kind: 'write_through', id, ack, nodes, rc, copies, due: this.now + this.delay, tokens: copies.filter((c) => c[0] === this.host).length };
    if (this.delay > 0) { this.transfers.push(t); this.note('transfer', `write-through ack ${ack}: ${copies.length} token(s) of node ${id} in flight for ${this.delay} step(s)`, [id]); return; }
    this.finishWriteThrough(t);
  }

  finishWriteThrough(t) {
    this.copy(t.copies);
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
      for (const [to, d] of t.copies) if (to === this.kv) this.loading.set(d, t);
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
    const needs = (p) => [p.full.reduce((k, e) => k + e.slots.length, 0), p.swa.reduce((k, e) => k + e.slots.length, 0), p.mamba >= 0 ? 1 : 0];
    const empty = (p) => p.full.length === 0 && p.swa.length === 0 && p.mamba < 0;
    let plan = this.eng.call('load_back', { anchor }).plan;
    if (plan.pinned || empty(plan)) { this.stats.load_backs_skipped++; return false; }
    let need = needs(plan);
    for (let c = 0; c < 3; c++) {
      if (need[c] === 0) continue;
      if (!this.devPools[c] || !this.hostPools[c]) throw new Error(`load-back of ${anchor} brings ${COMP_NAMES[c]} data, but there are no ${COMP_NAMES[c]} pools`);
      try { this.ensure(need[c], c); } catch (e) {
        if (e instanceof ExhaustedError) { this.stats.load_backs_skipped++; return false; }
        throw e;
      }
    }
    plan = this.eng.call('load_back', { anchor }).plan;
    need = needs(plan);
    for (let c = 0; c < 3; c++) if (need[c] > 0 && this.devPools[c].available < need[c]) { this.stats.load_backs_skipped++; return false; }
    if (plan.pinned || empty(plan)) { this.stats.load_backs_skipped++; return false; }
    // Plain Full slots: the loaded SWA slots are mapped by the commit's RebuildFullToSWAMapping actions.
    const full = plan.full.map((e) => this.kv.alloc(e.slots.length));
    const swa = plan.swa.map((e) => this.swa.alloc(e.slots.length));
    const mslot = plan.mamba >= 0 ? this.mamba.alloc(1)[0] : -1;
    const H = this.hostPools;
    plan.full.forEach((e, k) => e.slots.forEach((x, j) => t.copies.push([this.kv, full[k][j], H[0], x])));
    plan.swa.forEach((e, k) => e.slots.forEach((x, j) => t.copies.push([this.swa, swa[k][j], H[1], x])));
    if (mslot >= 0) t.copies.push([this.mamba, mslot, H[2], plan.mamba]);
    if (this.delay === 0) this.copy(t.copies);
    let m;
    try { m = this.eng.call('commit_load_back', { anchor, full, swa, mamba: mslot }); } catch (e) {
      this.kv.free(full.flat()); if (swa.length) this.swa.free(swa.flat()); if (mslot >= 0) this.mamba.free([mslot]);
      throw e;
    }
    this.execute(m.actions);
    t.tokens = need[0];
    this.stats.load_backs++; this.stats.loaded_tokens += need[0];
    return true;
  }

  finishLoadBack(t) {
    if (this.delay > 0) { this.copy(t.copies); for (const [to, d] of t.copies) if (to === this.kv) this.loading.delete(d); }
    this.eng.call('finish_load_back', { anchor: t.anchor });
    this.releaseLoadBack(t);
  }

  // --- the request lifecycle ---
  /**
   * arrive matches tokens in ns and locks the matched prefix; with a host
   * tier a host-only continuation is loaded back first; in Mamba trees the
   * request gets its own state (a copy of the cached one its match ends
   * on). It returns the request; in asynchronous mode it may be waiting
   * (req.ready false) until tick completes the transfers it needs.
   */
  arrive(ns, tokens) {
    const req = { rid: this.nextRid++, ns, tokens: tokens.slice(), slots: [], ready: false, done: false, wait: null,
      first: -1, hostHit: 0, protected: 0, cached: 0, last: '0', rcpt: null, hash: null, tried: false,
      swaEvicted: 0, swaBranch: 0, swaReleased: false, mambaBranch: 0, mstate: -1, ckLen: 0, ckHash: null };
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
    const n = m.indices.length;
    req.hostHit = Math.max(n - req.first, 0);
    this.stats.host_hit_tokens += req.hostHit;
    req.slots = m.indices.slice();
    if (this.canary) {
      req.hash = this.verifyChain(req.ns, req.tokens, req.slots, this.matchWindow(n));
      if (this.mamba && m.mamba_slot >= 0) this.verifyState(m.mamba_slot, req.hash, n);
    }
    const rc = this.eng.call('lock', { node: m.last_device }).receipt;
    req.last = m.last_device; req.rcpt = rc;
    req.protected = req.cached = n;
    if (this.swa && m.swa_branching_seqlen > 0) req.swaBranch = m.swa_branching_seqlen;
    if (this.mamba && m.mamba_branching_seqlen > 0) req.mambaBranch = m.mamba_branching_seqlen;
    if (this.mamba) {
      try { this.forkState(req, m.mamba_slot); } catch (e) {
        this.eng.call('unlock', { node: req.last, receipt: req.rcpt, skip_swa: false });
        req.done = true; throw e;
      }
    }
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

  /** matchWindow is the last window of an n-atom prefix: the SWA KV a hit promises. */
  matchWindow(n) { return this.swa ? [Math.max(0, n - this.window), n] : null; }

  /**
   * verifyChain checks that slots[i] holds the canary record of
   * tokens[..i] (and its SWA slot too for positions in win), and returns
   * the prefix hash after them.
   */
  verifyChain(ns, tokens, slots, win) {
    let h = canarySeed(ns); let bad = 0; let firstBad = -1; let checked = slots.length;
    for (let i = 0; i < slots.length; i++) {
      h = canaryStep(h, tokens[i]);
      canaryRecord(this.rec, h, i);
      if (!sameRecord(this.kv.read(slots[i]), this.rec)) { bad++; if (firstBad < 0) firstBad = i; continue; }
      if (win && i >= win[0] && i < win[1]) {
        checked++;
        const x = this.swaOf[slots[i]];
        if (x < 0 || !sameRecord(this.swa.read(x), this.rec)) { bad++; if (firstBad < 0) firstBad = i; }
      }
    }
    this.stats.canary_checked += checked;
    if (bad) {
      this.stats.canary_mismatches += bad;
      throw new CanaryError(`canary: ${bad} of ${slots.length} matched slots hold the wrong bytes (first at position ${firstBad}, slot ${slots[firstBad]})`);
    }
    return h;
  }

  // Mamba state records: the prefix hash and the atom count, tagged.
  stateRecord(h, n) { canaryRecord(this.rec, h, n); this.rec[7] |= 0x80; return this.rec; }
  putState(slot, h, n) { this.mamba.write(slot, this.stateRecord(h, n)); }
  stateIs(slot, h, n) { return sameRecord(this.mamba.read(slot), this.stateRecord(h, n)); }
  verifyState(slot, h, n) {
    this.stats.canary_checked++;
    if (this.stateIs(slot, h, n)) return;
    this.stats.canary_mismatches++;
    throw new CanaryError(`canary: mamba state slot ${slot} does not hold the state after ${n} atoms`);
  }
  /** stateAt is the hash of the request's state after n atoms, derived from its running state (wrong when that is wrong). */
  stateAt(r, n) {
    const ok = this.stateIs(r.mstate, r.hash, r.slots.length);
    let h;
    if (n === r.slots.length) h = r.hash;
    else if (n === r.ckLen) h = r.ckHash;
    else { h = canarySeed(r.ns); for (let i = 0; i < n; i++) h = canaryStep(h, r.tokens[i]); }
    return ok ? h : [~h[0] >>> 0, ~h[1] >>> 0];
  }
  mambaAtoms(n) { return Math.floor(n / this.grid) * this.grid; }
  allocState() {
    this.ensure(1, COMPONENTS.mamba);
    const [s] = this.mamba.alloc(1);
    this.ownedMamba++;
    return s;
  }
  dropState(slot) { this.ownedMamba--; this.freePool(this.mamba, [slot]); }
  forkState(r, src) {
    const slot = this.allocState();
    if (src >= 0) { this.mamba.copyFrom(slot, this.mamba, src); this.stats.mamba_forks++; }
    else if (this.canary) this.putState(slot, r.hash, r.slots.length);
    r.mstate = slot; r.ckLen = r.slots.length; r.ckHash = r.hash;
  }
  settleDonation(slot, res) {
    this.ownedMamba--;
    if (res.mamba_exist) this.freePool(this.mamba, [slot]); else this.stats.mamba_donated++;
  }
  ownSWA(r) { return this.swa ? Math.max(0, r.slots.length - Math.max(r.swaEvicted, r.protected)) : 0; }

  usable(req) {
    if (!req || req.done) throw new Error('the request is done');
    if (!req.ready) throw new Error(`request ${req.rid} is waiting for a transfer`);
  }

  /** prefill gives fresh slots to the request's uncomputed tokens (all of them by default). */
  prefill(req, n = req.tokens.length - req.slots.length) {
    this.usable(req);
    if (n < 0 || n > req.tokens.length - req.slots.length) throw new Error(`prefill of ${n} tokens, ${req.tokens.length - req.slots.length} pending`);
    if (n === 0) return;
    if (this.swa) this.slideWindow(req);
    const start = req.slots.length;
    this.alloc(req.slots, n);
    this.owned += n; if (this.swa) this.ownedSWA += n; this.stats.computed_tokens += n;
    if (this.canary) this.writeComputed(req, start);
    this.note('prefill', `request ${req.rid}: ${n} token(s) computed into fresh device slots`, []);
  }

  /**
   * insertFresh inserts tokens with freshly computed slots and no match or
   * lock first (the raw insert op): the tree keeps what it lacked, frees
   * the duplicates through actions, and the ragged tail is freed here.
   */
  insertFresh(ns, tokens) {
    const r = { rid: this.nextRid++, ns, tokens: tokens.slice(), slots: [], ready: true, done: false, protected: 0,
      swaEvicted: 0, swaBranch: 0, swaReleased: false, mstate: -1, hash: canarySeed(ns) };
    const n = tokens.length;
    this.alloc(r.slots, n);
    this.owned += n; if (this.swa) this.ownedSWA += n; this.stats.computed_tokens += n;
    try {
      if (this.canary) this.writeComputed(r, 0);
      const res = this.insert(r, n, false, -1);
      this.freeOwned(r, res.total_len, n);
      return res;
    } finally {
      this.owned -= n; if (this.swa) this.ownedSWA -= n;
    }
  }

  /** extend appends decoded tokens to the request and computes them (one Extend per token, as a decoder calls it). */
  extend(req, ...tokens) {
    this.usable(req);
    req.tokens.push(...tokens);
    this.prefill(req);
  }

  writeComputed(r, start) {
    let h = r.hash; const old = r.hash;
    for (let i = start; i < r.slots.length; i++) {
      h = canaryStep(h, r.tokens[i]);
      canaryRecord(this.rec, h, i);
      this.kv.write(r.slots[i], this.rec);
      if (this.swa) this.swa.write(this.swaOf[r.slots[i]], this.rec);
      if (this.grid > 0 && (i + 1) % this.grid === 0) { r.ckLen = i + 1; r.ckHash = h; }
    }
    r.hash = h;
    if (r.mstate >= 0) {
      if (!this.stateIs(r.mstate, old, start)) h = [~h[0] >>> 0, ~h[1] >>> 0];
      this.putState(r.mstate, h, r.slots.length);
    }
  }

  /** slideWindow drops the SWA slots of the request's own positions that left its window (see host/native). */
  slideWindow(r) {
    const e = this.alignedAtoms(r.slots.length) - this.winPages;
    if (e <= r.swaEvicted) return;
    const b = r.swaBranch;
    if (b > r.protected && e >= r.protected && b <= r.slots.length) { r.swaBranch = 0; this.cacheBranch(r, b); }
    const from = Math.max(r.swaEvicted, r.protected);
    if (from < e) { this.freeSWAOf(r.slots.slice(from, e)); this.ownedSWA -= e - from; this.stats.swa_window_freed += e - from; }
    r.swaEvicted = e;
    if (!r.swaReleased && r.protected > 0 && e >= r.protected) {
      const m = this.eng.call('unlock_swa_early', { node: r.last, receipt: r.rcpt });
      r.swaReleased = true; this.stats.swa_early_releases++;
      this.execute(m.actions);
    }
  }

  cacheBranch(r, n) {
    try { this.finishChunk(r, n); } catch (e) { if (r.done || !(e instanceof ExhaustedError)) throw e; }
  }

  insert(r, upto, chunked, mslot) {
    let step = this.eng.call('begin_insert', { namespace: r.ns, tokens: r.tokens.slice(0, upto), slots: r.slots.slice(0, upto),
      prev_prefix_len: Math.min(r.protected, this.alignedAtoms(upto)), chunked,
      swa_evicted_seqlen: this.swa ? r.swaEvicted : 0, swa_branching_seqlen: this.swa ? r.swaBranch : 0, mamba_slot: mslot });
    for (;;) {
      this.execute(step.actions);
      if (step.done) return step.result;
      step = this.eng.call('resume_insert');
    }
  }

  /** freeOwned frees the request's own slots [from, to): Full-only below its SWA-evicted length. */
  freeOwned(r, from, to) {
    if (from >= to) return;
    if (!this.swa) return this.freeDevice(r.slots.slice(from, to));
    const mid = Math.min(Math.max(r.swaEvicted, from), to);
    this.freeKV(r.slots.slice(from, mid), false);
    this.freeKV(r.slots.slice(mid, to), true);
  }

  retire(r) {
    this.owned -= r.slots.length - r.protected;
    this.ownedSWA -= this.ownSWA(r);
    if (r.mstate >= 0) { this.ownedMamba--; r.mstate = -1; }
    r.done = true; this.live.delete(r);
  }

  /**
   * finishChunk caches the request's first upto tokens while it keeps
   * running (chunked prefill: in the playground, the Mamba and SWA
   * branch points host/native caches early), then takes the tree's slots
   * for that prefix and moves its lock there.
   */
  finishChunk(r, upto) {
    let want = this.alignedAtoms(upto);
    if (this.mamba) { want = this.mambaAtoms(upto); upto = want; }
    if (want <= r.protected) return;
    if (this.swa && (r.swaEvicted > r.protected || r.swaReleased) && want - Math.max(r.swaEvicted, r.protected) < this.window) {
      throw new Error(`chunk end ${want}: the request holds SWA KV only from ${Math.max(r.swaEvicted, r.protected)} on`);
    }
    let mslot = -1;
    if (this.mamba) {
      mslot = this.allocState();
      if (want === r.slots.length) this.mamba.copyFrom(mslot, this.mamba, r.mstate);
      else if (this.canary) this.putState(mslot, this.stateAt(r, want), want);
    }
    const res = this.insert(r, upto, true, mslot);
    if (mslot >= 0) this.settleDonation(mslot, res);
    const a = res.total_len;
    const m = this.eng.call('match', { namespace: r.ns, tokens: r.tokens.slice(0, upto) });
    this.execute(m.actions);
    if (m.indices.length !== a) throw new Error(`re-match after a chunk insert of ${a} atoms found ${m.indices.length}`);
    for (let i = r.protected; i < a; i++) r.slots[i] = m.indices[i];
    const rc = this.eng.call('lock', { node: m.last_device }).receipt;
    this.eng.call('unlock', { node: r.last, receipt: r.rcpt, skip_swa: r.swaReleased });
    this.owned -= a - r.protected;
    this.ownedSWA -= this.ownSWA(r);
    r.protected = a; r.last = m.last_device; r.rcpt = rc; r.swaReleased = false;
    this.ownedSWA += this.ownSWA(r);
    this.stats.chunk_finishes++;
    if (this.canary) {
      const h = this.verifyChain(r.ns, r.tokens, r.slots.slice(0, a), this.matchWindow(a));
      if (this.mamba && m.mamba_slot >= 0) this.verifyState(m.mamba_slot, h, a);
    }
  }

  /** finish caches the request's page-aligned computed prefix, frees its ragged tail and releases its lock. */
  finish(req) {
    this.usable(req);
    const computed = req.slots.length;
    if (this.mamba) {
      const b = req.mambaBranch;
      if (b > req.protected && b < this.mambaAtoms(computed)) { req.mambaBranch = 0; this.cacheBranch(req, b); }
    }
    let upto = computed; let mslot = -1;
    if (this.mamba) {
      const n = Math.max(this.mambaAtoms(computed), req.protected);
      upto = n; mslot = req.mstate;
      if (this.canary && n !== computed) this.putState(req.mstate, this.stateAt(req, n), n);
    }
    const res = this.insert(req, upto, false, mslot);
    if (mslot >= 0) { this.settleDonation(mslot, res); req.mstate = -1; }
    this.freeOwned(req, Math.max(res.total_len, req.protected), computed);
    this.eng.call('unlock', { node: req.last, receipt: req.rcpt, skip_swa: req.swaReleased });
    this.retire(req);
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
    if (this.swa) {
      const t = Number(st.evictable[1]) + Number(st.protected[1]);
      if (t + this.ownedSWA !== this.swa.inUse) throw new Error(`SWA pool: ${this.swa.inUse} slots in use, the tree holds ${t} and requests own ${this.ownedSWA}`);
      if (this.mapped !== this.swa.inUse) throw new Error(`SWA mapping: ${this.mapped} full slots map to SWA slots, ${this.swa.inUse} SWA slots are in use`);
    }
    if (this.mamba) {
      const t = Number(st.evictable[2]) + Number(st.protected[2]);
      if (t + this.ownedMamba !== this.mamba.inUse) throw new Error(`Mamba pool: ${this.mamba.inUse} states in use, the tree holds ${t} and requests own ${this.ownedMamba}`);
    }
    this.hostPools.forEach((p, c) => {
      if (!p) return;
      let held = 0; for (const b of this.held[c]) held += b;
      if (held !== p.inUse) throw new Error(`${COMP_NAMES[c]} host pool: ${p.inUse} slots in use, the tree holds ${held}`);
    });
  }
}

export { PoolError, EngineError };
