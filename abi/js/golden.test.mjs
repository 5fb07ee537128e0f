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

test('vectors exist and cover every non-reserved op', () => {
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
