// Runs the golden vectors through the JS codec and through radixkv.wasm
// on Node's built-in WASI. Run: node --test abi/js/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { WASI } from 'node:wasi';
import { encodeRequest, decodeResponse, Guest, OPS, CODES, EVENTS, HASH_CONVENTIONS, ACTIONS, COMPONENTS } from './codec.mjs';

const here = new URL('.', import.meta.url);
const vectors = JSON.parse(await readFile(new URL('../testdata/vectors.json', here), 'utf8'));
const wasmBytes = await readFile(new URL('../../wasmmod/radixkv.wasm', here));

const hex = (b) => Buffer.from(b).toString('hex');
const unhex = (s) => new Uint8Array(Buffer.from(s, 'hex'));

async function newGuest() {
  const wasi = new WASI({ version: 'preview1', args: [], env: {} });
  const { instance } = await WebAssembly.instantiate(wasmBytes, wasi.getImportObject());
  wasi.initialize(instance); // c-shared reactor: runs _initialize
  return new Guest(instance);
}

test('vectors exist and cover every op', () => {
  const seen = new Set(vectors.filter((v) => v.args).map((v) => v.args.op));
  for (const name of Object.keys(OPS)) assert.ok(seen.has(name), `no vector for ${name}`);
});

test('JS codec encodes every structured request byte for byte', () => {
  for (const v of vectors) {
    if (!v.args) continue;
    assert.equal(hex(encodeRequest(v.args)), v.request, v.name);
  }
});

test('JS codec decodes every response to the golden structure', () => {
  for (const v of vectors) {
    assert.deepStrictEqual(decodeResponse(unhex(v.response)), v.decoded, v.name);
  }
});

test('radixkv.wasm answers every vector byte for byte', async () => {
  const g = await newGuest();
  assert.equal(g.abiVersion(), 1);
  for (const v of vectors) {
    const req = v.args ? encodeRequest(v.args) : unhex(v.request);
    assert.equal(hex(g.call(req)), v.response, v.name);
  }
  g.close();
});

test('a small session through the JS client', async () => {
  const g = await newGuest();
  const call = (q) => decodeResponse(g.call(encodeRequest(q)));
  const c = call({ op: 'create', id: 1, config: { page_size: 1, components: [0], policy: 'lru', bigram: false, host_tier: false, write_policy: 0, write_through_threshold: 0, kv_events: false } });
  assert.equal(c.status, 0);
  const h = c.handle;
  const ins = call({ op: 'insert', instance: h, id: 2, tokens: [7, 8, 9], slots: [0, 1, 2] });
  assert.equal(ins.result.total_len, 3);
  const m = call({ op: 'match', instance: h, id: 3, tokens: [7, 8, 1] });
  assert.deepStrictEqual(m.indices, [0, 1]);
  const lk = call({ op: 'lock', instance: h, id: 4, node: m.last_device });
  assert.equal(lk.receipt.delta, '2');
  const bad = call({ op: 'unlock', instance: h, id: 5, node: m.last_device, receipt: { ...lk.receipt, serial: '99' } });
  assert.equal(bad.code, CODES.receipt);
  assert.equal(call({ op: 'unlock', instance: h, id: 6, node: m.last_device, receipt: lk.receipt }).status, 0);
  const ev = call({ op: 'evict', instance: h, id: 7, component: 0, want: 10n });
  assert.equal(ev.freed, '3');
  assert.deepStrictEqual(ev.actions.flatMap((a) => a.slots).sort(), [0, 1, 2]);
  assert.equal(call({ op: 'sanity_check', instance: h, id: 8 }).status, 0);
  g.close();
});

test('KV events through the JS client', async () => {
  const g = await newGuest();
  const call = (q) => decodeResponse(g.call(encodeRequest(q)));
  const c = call({ op: 'create', id: 1, config: { page_size: 2, components: [], policy: '', bigram: false, host_tier: false, write_policy: 0, write_through_threshold: 0, kv_events: true, hash_convention: HASH_CONVENTIONS.vllm } });
  assert.equal(c.status, 0, c.message);
  const h = c.handle;
  assert.equal(call({ op: 'insert', instance: h, id: 2, tokens: [1, 2, 3, 4], slots: [0, 1, 2, 3], session_id: 'r1' }).status, 0);
  assert.equal(call({ op: 'insert', instance: h, id: 3, tokens: [1, 2, 3, 4, 5, 6], slots: [4, 5, 6, 7, 8, 9], session_id: 'r1' }).status, 0);
  const ev = call({ op: 'take_events', instance: h, id: 4 });
  assert.equal(ev.events.length, 1, 'the second store coalesces with the first');
  const [e] = ev.events;
  assert.equal(e.kind, EVENTS.block_stored);
  assert.equal(e.block_hashes.length, 3);
  assert.deepStrictEqual(e.token_ids, [1, 2, 3, 4, 5, 6]);
  assert.equal(e.session_id, 'r1');
  assert.deepStrictEqual(call({ op: 'take_events', instance: h, id: 5 }).events, [], 'drained');
  assert.equal(call({ op: 'evict', instance: h, id: 6, component: 0, want: 100n }).freed, '6');
  const rm = call({ op: 'take_events', instance: h, id: 7 }).events;
  assert.equal(rm.length, 1);
  assert.equal(rm[0].kind, EVENTS.block_removed);
  assert.deepStrictEqual([...rm[0].block_hashes].sort(), [...e.block_hashes].sort());
  g.close();
});

test('a hybrid (full, swa, mamba) session through the JS client', async () => {
  const g = await newGuest();
  const call = (q) => decodeResponse(g.call(encodeRequest(q)));
  const c = call({ op: 'create', id: 1, config: { page_size: 2, components: [COMPONENTS.full, COMPONENTS.swa, COMPONENTS.mamba], policy: '', bigram: false, host_tier: false, write_policy: 0, write_through_threshold: 0, kv_events: false, swa_window: 4, mamba_max_path_states: 1 } });
  assert.equal(c.status, 0, c.message);
  assert.equal(c.components, 7);
  const h = c.handle;
  const ins = call({ op: 'insert', instance: h, id: 2, tokens: [1, 2, 3, 4, 5, 6, 7, 8], slots: [0, 1, 2, 3, 4, 5, 6, 7], mamba_slot: 40 });
  assert.equal(ins.status, 0, ins.message);
  const kinds = ins.actions.map((a) => a.kind);
  assert.deepStrictEqual(kinds, [ACTIONS.swa_rebuild, ACTIONS.swa_rebuild, ACTIONS.mamba_evict_excess_path_states]);
  const ex = call({ op: 'evict_excess_path_states', instance: h, id: 3, node: ins.actions[2].node });
  assert.equal(ex.status, 0, ex.message);
  const m = call({ op: 'match', instance: h, id: 4, tokens: [1, 2, 3, 4, 5, 6, 7, 8] });
  assert.equal(m.mamba_slot, 40);
  assert.equal(m.indices.length, 8);
  const lk = call({ op: 'lock', instance: h, id: 5, node: m.last_device });
  assert.notEqual(lk.receipt.swa_uuid, '0');
  assert.equal(call({ op: 'unlock_swa_early', instance: h, id: 6, node: m.last_device, receipt: lk.receipt }).status, 0);
  assert.equal(call({ op: 'unlock', instance: h, id: 7, node: m.last_device, receipt: lk.receipt, skip_swa: false }).code, CODES.receipt);
  assert.equal(call({ op: 'unlock', instance: h, id: 8, node: m.last_device, receipt: lk.receipt, skip_swa: true }).status, 0);
  const lru = call({ op: 'lru_order', instance: h, id: 9, component: COMPONENTS.swa, host: false });
  assert.equal(lru.nodes.length, 2);
  const ev = call({ op: 'evict', instance: h, id: 10, component: COMPONENTS.mamba, want: 1n });
  assert.equal(ev.freed, '1');
  assert.deepStrictEqual(ev.actions.filter((a) => a.component === COMPONENTS.mamba).map((a) => a.slots), [[40]]);
  assert.equal(call({ op: 'sanity_check', instance: h, id: 11 }).status, 0);
  g.close();
});

test('a host-tier (write-back) session through the JS client', async () => {
  const g = await newGuest();
  const call = (q) => decodeResponse(g.call(encodeRequest(q)));
  const c = call({ op: 'create', id: 1, config: { page_size: 2, components: [COMPONENTS.full, COMPONENTS.swa], policy: '', bigram: false, host_tier: true, write_policy: 1, write_through_threshold: 0, kv_events: false, swa_window: 4 } });
  assert.equal(c.status, 0, c.message);
  const h = c.handle;
  const ins = call({ op: 'insert', instance: h, id: 2, tokens: [1, 2, 3, 4], slots: [0, 1, 2, 3] });
  assert.equal(ins.status, 0, ins.message);
  const leaf = ins.result.last_device;
  // A write-back eviction step hands out BackupKV and changes nothing.
  assert.equal(call({ op: 'evict_start', instance: h, id: 3, component: COMPONENTS.full, want: 4n }).status, 0);
  const st = call({ op: 'evict_next', instance: h, id: 4 });
  assert.deepStrictEqual(st.actions.map((a) => a.kind), [ACTIONS.backup_kv]);
  const spec = call({ op: 'backup_spec', instance: h, id: 5, node: leaf }).spec;
  assert.deepStrictEqual(spec.full, [0, 1, 2, 3]);
  assert.equal(spec.swa.length, 1);
  const commit = call({ op: 'commit_backup', instance: h, id: 6, node: leaf, full: [100, 101, 102, 103], swa: [[200, 201, 202, 203]], mamba: -1 });
  assert.equal(commit.status, 0, commit.message);
  const dem = call({ op: 'demote', instance: h, id: 7, node: leaf });
  assert.deepStrictEqual(dem.actions.map((a) => a.kind), [ACTIONS.free_device_slots, ACTIONS.free_device_slots]);
  assert.equal(call({ op: 'evict_end', instance: h, id: 8 }).status, 0);
  // The match sees the host copy; a load-back brings it back.
  const m = call({ op: 'match', instance: h, id: 9, tokens: [1, 2, 3, 4] });
  assert.equal(m.host_hit_len, 4);
  assert.equal(m.last_host, leaf);
  const hl = call({ op: 'host_lock', instance: h, id: 10, node: leaf });
  assert.equal(hl.receipt.host, true);
  const lk = call({ op: 'lock', instance: h, id: 11, node: leaf });
  const plan = call({ op: 'load_back', instance: h, id: 12, anchor: leaf }).plan;
  assert.equal(plan.pinned, false);
  assert.deepStrictEqual(plan.full, [{ node: leaf, slots: [100, 101, 102, 103] }]);
  const lb = call({ op: 'commit_load_back', instance: h, id: 13, anchor: leaf, full: [[10, 11, 12, 13]], swa: [[20, 21, 22, 23]], mamba: -1 });
  assert.equal(lb.status, 0, lb.message);
  assert.deepStrictEqual(lb.actions.map((a) => a.kind), [ACTIONS.rebuild_full_to_swa_mapping]);
  assert.deepStrictEqual(lb.actions[0].incoming, [20, 21, 22, 23]);
  assert.equal(call({ op: 'sanity_check_ongoing', instance: h, id: 14, write_through: [], load_back: [leaf] }).status, 0);
  assert.equal(call({ op: 'sanity_check_ongoing', instance: h, id: 15, write_through: [], load_back: [] }).code, CODES.sanity);
  assert.equal(call({ op: 'finish_load_back', instance: h, id: 16, anchor: leaf }).status, 0);
  assert.equal(call({ op: 'host_unlock', instance: h, id: 17, node: leaf, receipt: lk.receipt }).code, CODES.receipt);
  assert.equal(call({ op: 'unlock', instance: h, id: 18, node: leaf, receipt: lk.receipt }).status, 0);
  assert.equal(call({ op: 'host_unlock', instance: h, id: 19, node: leaf, receipt: hl.receipt }).status, 0);
  const info = call({ op: 'inspect', instance: h, id: 20, node: leaf }).info;
  assert.deepStrictEqual(info.components[0].device, [10, 11, 12, 13]);
  assert.equal(info.pinned_by, '0');
  const keys = call({ op: 'storage_spec', instance: h, id: 21, node: leaf }).storage;
  assert.equal(keys.full.length, 2);
  assert.match(keys.full[0], /^[0-9a-f]{64}$/);
  const ev = call({ op: 'evict_host', instance: h, id: 22, component: COMPONENTS.full, want: 4n });
  assert.equal(ev.freed, '4');
  assert.deepStrictEqual(ev.actions.map((a) => a.kind), [ACTIONS.free_host_slots]);
  assert.equal(call({ op: 'sanity_check', instance: h, id: 23 }).status, 0);
  g.close();
});
