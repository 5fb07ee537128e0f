// radixkv ABI codec for JavaScript, written from abi/SPEC.md alone.
//
// Requests are encoded from plain objects and responses decoded to plain
// objects in the JSON form of abi/testdata/vectors.json: integers of up to
// 32 bits are Numbers, 64-bit integers and node ids are decimal strings,
// arrays are never null. Pass BigInt or string for 64-bit fields.

export const VERSION = 1;
export const REQUEST_MAGIC = 0x51564b52; // "RKVQ"
export const RESPONSE_MAGIC = 0x53564b52; // "RKVS"
export const HEADER_SIZE = 24;
export const NUM_COMPONENTS = 3;

export const OPS = Object.freeze({
  version: 0x01, create: 0x02, destroy: 0x03, reset: 0x04, stats: 0x05,
  match: 0x10, insert: 0x11, begin_insert: 0x12, resume_insert: 0x13, end_insert: 0x14,
  lock: 0x18, unlock: 0x19,
  evict: 0x20, evict_start: 0x21, evict_next: 0x22, evict_end: 0x23, evict_excess_path_states: 0x24,
  sanity_check: 0x30, inspect: 0x31, render: 0x32, device_leaves: 0x33, nodes: 0x34, dfs_weight_order: 0x35,
  lru_order: 0x36, sanity_check_ongoing: 0x37,
  unlock_swa_early: 0x40,
  // The host tier (HiCache).
  host_lock: 0x41, host_unlock: 0x42, evict_host: 0x43,
  commit_backup: 0x44, load_back: 0x45, finish_load_back: 0x46,
  take_events: 0x47,
  backup_spec: 0x48, mark_write_through_pending: 0x49, finish_write_through: 0x4a,
  demote: 0x4b, drop_subtree_no_host: 0x4c, commit_load_back: 0x4d, insert_host: 0x4e,
  // Storage keys and the external cache linker.
  storage_spec: 0x50, backfill_hashes: 0x51, linker_chain: 0x52,
  mark_linker_pending: 0x53, finish_linker_offload: 0x54, mark_linker_stored_path: 0x55,
  // The SSM snapshot index beside each instance's tree.
  snapshot_configure: 0x60, snapshot_lookup: 0x61, snapshot_insert: 0x62, snapshot_evict: 0x63,
  snapshot_promote: 0x64, snapshot_forget: 0x65, snapshot_end_session: 0x66, snapshot_stats: 0x67,
  // The block-cache facade beside each instance's tree.
  blocks_configure: 0x68, blocks_lookup: 0x69, blocks_peek: 0x6a, blocks_insert: 0x6b,
  blocks_release: 0x6c, blocks_evict: 0x6d, blocks_stats: 0x6e,
  protect: 0x58, unprotect: 0x59,
  // The marconi Mamba policy's alpha.
  mamba_set_alpha: 0x70,
  // begin_insert reusing the tokens (and first slots) of the instance's last match.
  begin_insert_matched: 0x80,
  match_lock: 0x81,
  begin_insert_matched_unlock: 0x82,
});

export const SNAPSHOT_KINDS = Object.freeze({ plain: 0, tail: 1, sibling: 2 });
export const TIER_OUTCOMES = Object.freeze({ removed: 0, spill: 1, drop: 2 });

export const COMPONENTS = Object.freeze({ full: 0, swa: 1, mamba: 2 });

export const CODES = Object.freeze({
  none: 0, internal: 1, truncated: 2, bad_magic: 3, bad_version: 4, unknown_op: 5,
  unknown_instance: 6, malformed: 7, unsupported: 8, exhausted: 9, stale_match: 10,
  invalid_config: 16, unknown_policy: 17, invalid_argument: 18, stale_node: 19, receipt: 20,
  insert_in_flight: 21, no_insert: 22, eviction_in_flight: 23, no_eviction: 24, busy: 25,
  broken: 26, sanity: 27,
  unknown_key: 28, unknown_session: 29, wrong_adapter: 30, resident: 31, slot_in_use: 32,
  block_in_use: 33, over_release: 34,
});

export const EVENTS = Object.freeze({ block_stored: 1, block_removed: 2, all_blocks_cleared: 3 });
export const MEDIA = Object.freeze({ gpu: 0, cpu_pinned: 1 });
export const HASH_CONVENTIONS = Object.freeze({ sglang: 0, vllm: 1 });

export const ACTIONS = Object.freeze({
  free_device_kv: 1, free_device_kv_full_only: 2, backup_kv: 3,
  replace_write_through_on_split: 4, free_device_slots: 5, free_host_slots: 6,
  swa_rebuild: 7, recover_swa_with_locked_full: 8, mamba_evict_excess_path_states: 9,
  rebuild_full_to_swa_mapping: 10,
});

const utf8 = new TextEncoder();
const utf8d = new TextDecoder('utf-8', { fatal: false });

class Writer {
  constructor(size = 256) { this.buf = new Uint8Array(size); this.n = 0; }
  room(k) {
    if (this.n + k <= this.buf.length) return;
    const nb = new Uint8Array(Math.max(2 * this.buf.length, this.n + k));
    nb.set(this.buf.subarray(0, this.n));
    this.buf = nb;
  }
  view() { return new DataView(this.buf.buffer, this.buf.byteOffset); }
  u8(v) { this.room(1); this.buf[this.n++] = v & 0xff; }
  bool(v) { this.u8(v ? 1 : 0); }
  u16(v) { this.room(2); this.view().setUint16(this.n, v, true); this.n += 2; }
  u32(v) { this.room(4); this.view().setUint32(this.n, v >>> 0, true); this.n += 4; }
  i32(v) { this.room(4); this.view().setInt32(this.n, v, true); this.n += 4; }
  u64(v) { this.room(8); this.view().setBigUint64(this.n, BigInt.asUintN(64, BigInt(v)), true); this.n += 8; }
  i64(v) { this.room(8); this.view().setBigInt64(this.n, BigInt.asIntN(64, BigInt(v)), true); this.n += 8; }
  str(s) { const b = utf8.encode(s ?? ''); this.u32(b.length); this.room(b.length); this.buf.set(b, this.n); this.n += b.length; }
  // Arrays are a u32 count then the raw little-endian run.
  u32s(a = []) {
    this.u32(a.length); this.room(4 * a.length);
    const dv = this.view();
    for (let i = 0; i < a.length; i++) dv.setUint32(this.n + 4 * i, a[i] >>> 0, true);
    this.n += 4 * a.length;
  }
  i32s(a = []) {
    this.u32(a.length); this.room(4 * a.length);
    const dv = this.view();
    for (let i = 0; i < a.length; i++) dv.setInt32(this.n + 4 * i, a[i], true);
    this.n += 4 * a.length;
  }
  u64s(a = []) { this.u32(a.length); for (const v of a) this.u64(v); }
  f64(v) { this.room(8); this.view().setFloat64(this.n, v ?? 0, true); this.n += 8; }
  // An optional array: a bool (present), then the array (empty when absent).
  optI32s(a) { this.bool(a != null); this.i32s(a ?? []); }
  optU64s(a) { this.bool(a != null); this.u64s(a ?? []); }
  // A list of slot arrays: a u32 count, then each array.
  slotLists(a = []) { this.u32(a.length); for (const v of a) this.i32s(v); }
  bytes() { return this.buf.slice(0, this.n); }
}

export class DecodeError extends Error {}

class Reader {
  constructor(bytes) { this.b = bytes; this.dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength); this.o = 0; }
  need(k, what) {
    if (this.o + k > this.b.length) throw new DecodeError(`${what}: need ${k} bytes at offset ${this.o}, have ${this.b.length - this.o}`);
  }
  u8(w) { this.need(1, w); return this.b[this.o++]; }
  bool(w) { const v = this.u8(w); if (v > 1) throw new DecodeError(`${w}: boolean byte ${v}`); return v === 1; }
  u16(w) { this.need(2, w); const v = this.dv.getUint16(this.o, true); this.o += 2; return v; }
  u32(w) { this.need(4, w); const v = this.dv.getUint32(this.o, true); this.o += 4; return v; }
  i32(w) { this.need(4, w); const v = this.dv.getInt32(this.o, true); this.o += 4; return v; }
  u64(w) { this.need(8, w); const v = this.dv.getBigUint64(this.o, true); this.o += 8; return v.toString(); }
  i64(w) { this.need(8, w); const v = this.dv.getBigInt64(this.o, true); this.o += 8; return v.toString(); }
  f64(w) { this.need(8, w); const v = this.dv.getFloat64(this.o, true); this.o += 8; return v; }
  count(w, size) {
    const n = this.u32(w);
    if (n * size > this.b.length - this.o) throw new DecodeError(`${w}: ${n} elements do not fit`);
    return n;
  }
  str(w) { const n = this.count(w, 1); const s = utf8d.decode(this.b.subarray(this.o, this.o + n)); this.o += n; return s; }
  u32s(w) {
    const n = this.count(w, 4); const out = new Array(n);
    for (let i = 0; i < n; i++) out[i] = this.dv.getUint32(this.o + 4 * i, true);
    this.o += 4 * n; return out;
  }
  i32s(w) {
    const n = this.count(w, 4); const out = new Array(n);
    for (let i = 0; i < n; i++) out[i] = this.dv.getInt32(this.o + 4 * i, true);
    this.o += 4 * n; return out;
  }
  u64s(w) { const n = this.count(w, 8); const out = new Array(n); for (let i = 0; i < n; i++) out[i] = this.u64(w); return out; }
  i64s(w) { const n = this.count(w, 8); const out = new Array(n); for (let i = 0; i < n; i++) out[i] = this.i64(w); return out; }
  strs(w) { const n = this.count(w, 4); const out = new Array(n); for (let i = 0; i < n; i++) out[i] = this.str(w); return out; }
  optI32s(w) {
    const present = this.bool(`${w}_present`); const v = this.i32s(w);
    if (!present && v.length) throw new DecodeError(`${w}: ${v.length} slots after present = 0`);
    return present ? v : null;
  }
  // A list of (node, slots) pairs: a u32 count, then per entry an id and an i32[].
  nodeSlots(w) {
    const n = this.count(w, 12); const out = [];
    for (let i = 0; i < n; i++) out.push({ node: this.u64(w), slots: this.i32s(w) });
    return out;
  }
  end() { if (this.o !== this.b.length) throw new DecodeError(`${this.b.length - this.o} trailing bytes`); }
}

function putNamespace(w, ns = {}) { w.str(ns.extra_key); w.str(ns.cache_salt); w.str(ns.lora); }
function getNamespace(r) { return { extra_key: r.str('extra_key'), cache_salt: r.str('cache_salt'), lora: r.str('lora') }; }

function putReceipt(w, rc) {
  w.u64(rc.node); w.u64(rc.serial); w.i64(rc.delta); w.i64(rc.swa_uuid); w.i64(rc.swa_host_uuid); w.u8(rc.skipped);
  w.bool(rc.host);
}
function getReceipt(r) {
  return { node: r.u64('node'), serial: r.u64('serial'), delta: r.i64('delta'),
    swa_uuid: r.i64('swa_uuid'), swa_host_uuid: r.i64('swa_host_uuid'), skipped: r.u8('skipped'), host: r.bool('host') };
}

/** encodeRequest encodes a request object ({op, instance, id, ...body}). */
export function encodeRequest(q) {
  const op = typeof q.op === 'string' ? OPS[q.op] : q.op;
  if (op === undefined) throw new Error(`unknown op ${q.op}`);
  const w = new Writer();
  w.u32(REQUEST_MAGIC); w.u16(VERSION); w.u16(op); w.u32(q.instance ?? 0); w.u32(0); w.u64(q.id ?? 0);
  switch (op) {
    case OPS.create: {
      const c = q.config;
      w.u32(c.page_size); w.u8(c.components.length); for (const x of c.components) w.u8(x);
      w.str(c.policy); w.bool(c.bigram); w.bool(c.host_tier); w.u8(c.write_policy);
      w.i32(c.write_through_threshold); w.bool(c.kv_events); w.u8(c.hash_convention ?? 0);
      w.i32(c.swa_window ?? 0); w.i32(c.mamba_chunk_size ?? 0); w.i32(c.mamba_max_path_states ?? 0);
      w.bool(c.external_linker); w.str(c.mamba_policy ?? '');
      for (const k of ['mamba_ssm_layers', 'mamba_attn_layers', 'mamba_mlp_layers', 'mamba_d', 'mamba_n']) w.i32(c[k] ?? 0);
      w.f64(c.mamba_alpha);
      break;
    }
    case OPS.match: case OPS.protect: putNamespace(w, q.namespace); w.u32s(q.tokens); break;
    case OPS.unprotect: w.u64(q.serial); break;
    case OPS.insert: case OPS.begin_insert:
      putNamespace(w, q.namespace); w.u32s(q.tokens); w.i32s(q.slots); w.i32(q.prev_prefix_len ?? 0);
      w.i64(q.priority ?? 0); w.bool(q.chunked); w.bool(q.track_adopted); w.str(q.session_id);
      w.i32(q.swa_evicted_seqlen ?? 0); w.i32(q.swa_branching_seqlen ?? 0); w.i32(q.mamba_slot ?? 0);
      break;
    case OPS.begin_insert_matched: case OPS.begin_insert_matched_unlock:
      w.u64(q.match_id); putNamespace(w, q.namespace); w.u32(q.token_count); w.u32(q.slot_prefix ?? 0);
      w.i32s(q.slots); w.i32(q.prev_prefix_len ?? 0);
      w.i64(q.priority ?? 0); w.bool(q.chunked); w.bool(q.track_adopted); w.str(q.session_id);
      w.i32(q.swa_evicted_seqlen ?? 0); w.i32(q.swa_branching_seqlen ?? 0); w.i32(q.mamba_slot ?? 0);
      if (op === OPS.begin_insert_matched_unlock) { w.u64(q.node); putReceipt(w, q.receipt); w.bool(q.skip_swa); }
      break;
    case OPS.lock: w.u64(q.node); w.u8(q.skip ?? 0); break;
    case OPS.match_lock: putNamespace(w, q.namespace); w.u32s(q.tokens); w.u8(q.skip ?? 0); break;
    case OPS.mamba_set_alpha: w.f64(q.alpha); break;
    case OPS.unlock: w.u64(q.node); putReceipt(w, q.receipt); w.bool(q.skip_swa); break;
    case OPS.unlock_swa_early: case OPS.host_unlock: w.u64(q.node); putReceipt(w, q.receipt); break;
    case OPS.evict: case OPS.evict_start: case OPS.evict_host: w.u8(q.component ?? 0); w.i64(q.want); break;
    case OPS.inspect: case OPS.evict_excess_path_states: case OPS.host_lock: case OPS.backup_spec: case OPS.demote:
    case OPS.drop_subtree_no_host: case OPS.storage_spec: case OPS.linker_chain:
      w.u64(q.node); break;
    case OPS.load_back: case OPS.finish_load_back: w.u64(q.anchor); break;
    case OPS.lru_order: w.u8(q.component ?? 0); w.bool(q.host); break;
    case OPS.dfs_weight_order: w.u64s(q.ids); break;
    case OPS.commit_backup: w.u64(q.node); w.optI32s(q.full); w.slotLists(q.swa); w.i32(q.mamba ?? -1); break;
    case OPS.commit_load_back: w.u64(q.anchor); w.slotLists(q.full); w.slotLists(q.swa); w.i32(q.mamba ?? -1); break;
    case OPS.mark_write_through_pending: case OPS.finish_write_through: w.u64s(q.nodes); w.i64(q.ack); break;
    case OPS.insert_host: w.u64(q.anchor); putNamespace(w, q.namespace); w.u32s(q.tokens); w.i32s(q.host_slots); break;
    case OPS.mark_linker_pending: w.u64s(q.nodes); w.i64(q.offload_id); break;
    case OPS.finish_linker_offload: w.u64s(q.nodes); w.i64(q.offload_id); w.bool(q.ok); break;
    case OPS.mark_linker_stored_path: w.u64(q.from); w.u64(q.until ?? 0); break;
    case OPS.sanity_check_ongoing: w.optU64s(q.write_through); w.optU64s(q.load_back); break;
    case OPS.snapshot_configure: {
      const c = q.config ?? {};
      w.f64(c.alpha); w.i32(c.lease_ttl ?? 0); w.bool(c.no_lease); w.bool(c.global_lru); w.bool(c.marconi);
      for (const k of ['ssm_layers', 'attn_layers', 'mlp_layers', 'd', 'n']) w.i32(c[k] ?? 0);
      w.f64(c.marconi_alpha);
      break;
    }
    case OPS.snapshot_lookup: w.u32s(q.tokens); w.i32(q.matched ?? 0); w.u64(q.session ?? 0); w.u64(q.adapter ?? 0); break;
    case OPS.snapshot_insert:
      w.u8(q.kind ?? 0); w.u32s(q.tokens); w.u64(q.adapter ?? 0); w.i32(q.slot); w.u64(q.session ?? 0); break;
    case OPS.snapshot_evict: w.bool(q.to_tier); w.i32(q.min_tokens ?? 0); break;
    case OPS.snapshot_promote: w.u64(q.key); w.u64(q.adapter ?? 0); w.i32(q.slot); w.u64(q.session ?? 0); break;
    case OPS.snapshot_forget: w.u64(q.key); w.u64(q.adapter ?? 0); break;
    case OPS.snapshot_end_session: w.u64(q.session); break;
    case OPS.blocks_configure: w.u32(q.block_size ?? 0); w.bool(q.sub_block_tail); break;
    case OPS.blocks_lookup: w.u32s(q.tokens); w.u64(q.session ?? 0); w.u64(q.adapter ?? 0); break;
    case OPS.blocks_peek: w.u32s(q.tokens); w.u64(q.adapter ?? 0); break;
    case OPS.blocks_insert:
      w.u32s(q.tokens); w.u32s(q.table); w.u32s(q.disks); w.i32(q.matched ?? 0); w.u64(q.adapter ?? 0); break;
    case OPS.blocks_release: w.u32s(q.tokens); w.i32(q.matched ?? -1); w.u64(q.adapter ?? 0); break;
    case OPS.blocks_evict: w.i32(q.want ?? 0); break;
  }
  return w.bytes();
}

const SNAPSHOT_COUNTERS = ['saves', 'overwrites', 'swept', 'lookups', 'hits', 'tier_hits', 'anchor_tokens',
  'recompute_on_hit', 'recompute_on_miss', 'evictions', 'spills', 'drops', 'fault_ins', 'reaps'];
const SNAPSHOT_SIZES = ['entries', 'resident', 'tiered', 'leased'];
const BLOCKS_COUNTERS = ['lookups', 'hits', 'misses', 'sub_block_hits', 'lookup_tokens', 'matched_tokens', 'inserts', 'evicted_blocks'];
const BLOCKS_SIZES = ['nodes', 'partial_blocks', 'blocks', 'runs', 'referenced', 'adapters'];

function getSnapshotMatch(r) {
  return { found: r.bool('found'), tiered: r.bool('tiered'), slot: r.i32('slot'), key: r.u64('key'),
    tokens: r.i32('tokens'), kind: r.u8('kind') };
}

function getInsertResult(r) {
  const res = { prefix_len: r.i32('prefix_len'), total_len: r.i32('total_len'), last_device: r.u64('last_device'),
    mamba_exist: r.bool('mamba_exist'), swa_branch_inserted: r.bool('swa_branch_inserted'), adopted: null };
  if (r.bool('adopted_present')) {
    const n = r.u8('adopted count'); res.adopted = [];
    for (let c = 0; c < n; c++) {
      const k = r.count('ranges', 8); const rs = [];
      for (let i = 0; i < k; i++) rs.push([r.i32('start'), r.i32('end')]);
      res.adopted.push(rs);
    }
  }
  return res;
}

function getNodeInfo(r) {
  const info = { id: r.u64('id'), parent: r.u64('parent'), children: r.u64s('children'),
    namespace: getNamespace(r), key: r.u32s('key'), components: [] };
  const n = r.u8('component count');
  if (n !== NUM_COMPONENTS) throw new DecodeError(`node info with ${n} components`);
  for (let c = 0; c < n; c++) {
    const dp = r.bool('device_present'); const dev = r.i32s('device');
    const hp = r.bool('host_present'); const host = r.i32s('host');
    info.components.push({ device: dp ? dev : null, host: hp ? host : null, lock: r.u32('lock'), host_lock: r.u32('host_lock') });
  }
  info.hits = r.i64('hits'); info.priority = r.i64('priority');
  info.last_access = r.i64('last_access'); info.creation = r.i64('creation'); info.dleaf = r.bool('dleaf');
  info.swa_uuid = r.i64('swa_uuid'); info.hleaf = r.bool('hleaf');
  info.write_through_pending = r.i64('write_through_pending'); info.pinned_by = r.u64('pinned_by');
  info.external_stored = r.bool('external_stored'); info.external_pending = r.i64('external_pending');
  return info;
}

// An action is at least 32 bytes (fixed part plus three empty counts).
function getActions(r) {
  const n = r.count('actions', 32); const out = [];
  for (let i = 0; i < n; i++) {
    const kind = r.u8('kind'); const component = r.u8('component');
    if (r.u16('reserved') !== 0) throw new DecodeError('action reserved field is not 0');
    out.push({ kind, component, node: r.u64('node'), ack: r.i64('ack'), nodes: r.u64s('nodes'), slots: r.i32s('slots'),
      incoming: r.i32s('incoming') });
  }
  return out;
}

// An event is at least 36 bytes (fixed part plus five empty counts).
function getEvents(r) {
  const n = r.count('events', 36); const out = [];
  for (let i = 0; i < n; i++) {
    const kind = r.u8('kind'); const medium = r.u8('medium'); const has_parent = r.bool('has_parent');
    if (r.u8('reserved') !== 0) throw new DecodeError('event reserved field is not 0');
    out.push({ kind, medium, has_parent, parent_block_hash: r.i64('parent_block_hash'), block_size: r.u32('block_size'),
      block_hashes: r.i64s('block_hashes'), token_ids: r.u32s('token_ids'),
      cache_salt: r.str('cache_salt'), session_id: r.str('session_id'), lora: r.str('lora') });
  }
  return out;
}

/** decodeResponse decodes response bytes to their JSON form. */
export function decodeResponse(bytes) {
  const r = new Reader(bytes);
  if (bytes.length < HEADER_SIZE) throw new DecodeError(`response of ${bytes.length} bytes`);
  if (r.u32('magic') !== RESPONSE_MAGIC) throw new DecodeError('bad response magic');
  const version = r.u16('version');
  if (version !== VERSION) throw new DecodeError(`response version ${version}`);
  const m = { op: r.u16('op'), status: r.u16('status'), code: r.u16('code'), instance: r.u32('instance'), id: r.u64('id') };
  if (m.status > 1) throw new DecodeError(`status ${m.status}`);
  if (m.status === 1) {
    m.message = r.str('message'); m.actions = getActions(r); r.end(); return m;
  }
  switch (m.op) {
    case OPS.version: m.abi_version = r.u32('abi_version'); m.implementation = r.str('implementation'); break;
    case OPS.create:
      m.handle = r.u32('handle'); m.root = r.u64('root'); m.page_size = r.u32('page_size');
      m.components = r.u8('components'); m.policy = r.str('policy'); break;
    case OPS.reset: m.root = r.u64('root'); break;
    case OPS.stats:
      m.root = r.u64('root'); m.page_size = r.u32('page_size'); m.components = r.u8('components'); m.policy = r.str('policy');
      m.evictable = [0, 1, 2].map(() => r.i64('evictable')); m.protected = [0, 1, 2].map(() => r.i64('protected'));
      m.insert_in_flight = r.bool('insert_in_flight'); m.eviction_in_flight = r.bool('eviction_in_flight');
      m.live_receipts = r.u32('live_receipts'); break;
    case OPS.match: case OPS.match_lock:
      m.indices = r.i32s('indices'); m.last_device = r.u64('last_device'); m.last_host = r.u64('last_host'); m.best = r.u64('best');
      for (const k of ['host_hit_len', 'swa_host_hit_len', 'swa_branching_seqlen', 'mamba_host_hit_len', 'mamba_branching_seqlen', 'full_kv_hit_len', 'mamba_slot']) m[k] = r.i32(k);
      if (m.op === OPS.match_lock) m.receipt = getReceipt(r);
      break;
    case OPS.insert: m.result = getInsertResult(r); break;
    case OPS.begin_insert: case OPS.resume_insert: case OPS.begin_insert_matched: case OPS.begin_insert_matched_unlock:
      m.done = r.bool('done'); m.result = getInsertResult(r);
      if (m.op === OPS.begin_insert_matched_unlock) {
        m.unlocked = r.bool('unlocked'); m.unlock_code = r.u16('unlock_code'); m.unlock_message = r.str('unlock_message');
      }
      break;
    case OPS.lock: case OPS.host_lock: m.receipt = getReceipt(r); break;
    case OPS.evict: case OPS.evict_host: m.freed = r.i64('freed'); break;
    case OPS.evict_next: m.node = r.u64('node'); m.freed = r.i64('freed'); m.done = r.bool('done'); break;
    case OPS.inspect: m.info = getNodeInfo(r); break;
    case OPS.render: m.text = r.str('text'); break;
    case OPS.device_leaves: case OPS.nodes: case OPS.lru_order: case OPS.mark_write_through_pending: case OPS.linker_chain:
      m.nodes = r.u64s('nodes'); break;
    case OPS.dfs_weight_order: m.order = r.i32s('order'); break;
    case OPS.take_events: m.events = getEvents(r); break;
    case OPS.backup_spec:
      m.spec = { node: r.u64('node'), full: r.optI32s('full'), swa: r.nodeSlots('swa'), mamba: r.i32('mamba') }; break;
    case OPS.drop_subtree_no_host: m.dropped = r.bool('dropped'); break;
    case OPS.load_back:
      m.plan = { anchor: r.u64('anchor'), full: r.nodeSlots('full'), swa: r.nodeSlots('swa'), mamba: r.i32('mamba'), pinned: r.bool('pinned') };
      break;
    case OPS.insert_host: m.result = { node: r.u64('node'), prefix_len: r.i32('prefix_len'), dropped: r.bool('dropped') }; break;
    case OPS.storage_spec:
      m.storage = { node: r.u64('node'), prefix_keys: r.strs('prefix_keys'), full: r.strs('full'), swa: r.strs('swa'), mamba: r.str('mamba') };
      break;
    case OPS.backfill_hashes: m.hashed = r.u32('hashed'); break;
    case OPS.snapshot_lookup: m.match = getSnapshotMatch(r); break;
    case OPS.blocks_lookup:
      m.blocks = r.u32s('blocks'); m.disk_ids = r.u32s('disk_ids'); m.matched_tokens = r.i32('matched_tokens');
      m.match = getSnapshotMatch(r); break;
    case OPS.blocks_peek: m.matched_tokens = r.i32('matched_tokens'); break;
    case OPS.blocks_insert:
      m.acquired = { blocks: r.u32s('blocks'), disk_ids: r.u32s('disk_ids'), released: r.u32s('released'),
        released_disk_ids: r.u32s('released_disk_ids'), unused: r.u32s('unused') };
      break;
    case OPS.blocks_evict: m.blocks = r.u32s('blocks'); m.disk_ids = r.u32s('disk_ids'); break;
    case OPS.blocks_stats: {
      const st = {};
      for (const k of BLOCKS_COUNTERS) st[k] = r.u64(k);
      for (const k of BLOCKS_SIZES) st[k] = r.u32(k);
      m.stats = st;
      break;
    }
    case OPS.snapshot_insert: case OPS.snapshot_end_session:
      m.displaced = { slots: r.i32s('slots'), blobs: r.u64s('blobs') }; break;
    case OPS.snapshot_evict:
      m.evicted = r.bool('evicted');
      m.evict = { outcome: r.u8('outcome'), slot: r.i32('slot'), key: r.u64('key'), adapter: r.u64('adapter'), tokens: r.i32('tokens') };
      break;
    case OPS.snapshot_stats: {
      const st = {};
      for (const k of SNAPSHOT_COUNTERS) st[k] = r.u64(k);
      for (const k of SNAPSHOT_SIZES) st[k] = r.u32(k);
      st.alpha = r.f64('alpha');
      m.stats = st;
      break;
    }
    case OPS.protect: m.serial = r.u64('serial'); m.len = r.i32('len'); break;
  }
  m.actions = getActions(r);
  r.end();
  return m;
}

/**
 * Guest wraps an instantiated radixkv module (after _initialize): it
 * copies a request into a guest buffer, calls, and copies the response
 * out before the next call can overwrite it.
 */
export class Guest {
  constructor(instance) {
    this.x = instance.exports;
    this.cap = 0; this.ptr = 0;
  }
  abiVersion() { return this.x.radixkv_abi_version(); }
  call(req) {
    if (req.length > this.cap) {
      if (this.ptr) this.x.radixkv_free(this.ptr);
      this.cap = Math.max(req.length, 2 * this.cap, 64);
      this.ptr = this.x.radixkv_alloc(this.cap) >>> 0;
    }
    new Uint8Array(this.x.memory.buffer, this.ptr, req.length).set(req);
    const packed = BigInt.asUintN(64, BigInt(this.x.radixkv_call(this.ptr, req.length)));
    const p = Number(packed >> 32n); const n = Number(packed & 0xffffffffn);
    return new Uint8Array(this.x.memory.buffer, p, n).slice();
  }
  close() { if (this.ptr) this.x.radixkv_free(this.ptr); this.ptr = 0; this.cap = 0; }
}
