import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Pool, PoolError, SLOT_BYTES, canarySeed, canaryStep, canaryRecord, sameRecord } from '../pools.mjs';

test('a pool hands out its slots lowest first, all or nothing', () => {
  const p = new Pool('p', 4);
  assert.deepEqual(p.alloc(3), [0, 1, 2]);
  assert.throws(() => p.alloc(2), PoolError);
  assert.equal(p.available, 1, 'a failed allocation takes nothing');
  p.free([1]);
  assert.deepEqual(p.alloc(2), [1, 3]);
  assert.equal(p.available, 0);
});

test('freeing checks every slot first and poisons the bytes', () => {
  const p = new Pool('p', 4);
  const [a, b] = p.alloc(2);
  p.write(a, new Uint8Array(SLOT_BYTES).fill(7));
  assert.throws(() => p.free([a, 3]), /freed while free/);
  assert.equal(p.available, 2, 'nothing was freed');
  assert.throws(() => p.free([a, a]), /twice/);
  assert.throws(() => p.free([9]), /out of range/);
  p.free([a, b]);
  assert.ok(p.read(a).every((x) => x === 0));
  assert.throws(() => p.free([a]), /freed while free/);
});

test('slot bytes copy between pools', () => {
  const d = new Pool('d', 2); const h = new Pool('h', 2);
  const [s] = d.alloc(1); const [t] = h.alloc(1);
  d.write(s, new Uint8Array(SLOT_BYTES).map((_, i) => i + 1));
  assert.equal(h.copyFrom(t, d, s), SLOT_BYTES);
  assert.deepEqual([...h.read(t)], [...d.read(s)]);
});

test('canary records depend on namespace, position and the whole prefix', () => {
  const rec = (ns, toks, pos) => { let h = canarySeed(ns); for (const t of toks) h = canaryStep(h, t); return canaryRecord(new Uint8Array(SLOT_BYTES), h, pos); };
  const base = rec({}, [1, 2, 3], 2);
  assert.ok(sameRecord(base, rec({}, [1, 2, 3], 2)));
  assert.ok(!sameRecord(base, rec({ cache_salt: 'a' }, [1, 2, 3], 2)), 'tenant');
  assert.ok(!sameRecord(base, rec({}, [1, 2, 4], 2)), 'last token');
  assert.ok(!sameRecord(base, rec({}, [2, 2, 3], 2)), 'first token');
  assert.ok(!sameRecord(base, rec({}, [1, 2, 3], 3)), 'position');
  assert.throws(() => new Pool('x', 1, 8), /at least/);
});

test('the vendored WASI shim is the pinned package (when npm ci has run)', async (t) => {
  const { readFile, readdir, access } = await import('node:fs/promises');
  const pkg = new URL('../node_modules/@bjorn3/browser_wasi_shim/', import.meta.url);
  try { await access(new URL('dist/', pkg)); } catch { t.skip('playground/node_modules is absent (npm ci in playground/)'); return; }
  const vend = new URL('../vendor/browser_wasi_shim/', import.meta.url);
  const files = (await readdir(new URL('dist/', pkg))).filter((f) => f.endsWith('.js'));
  assert.deepEqual((await readdir(vend)).filter((f) => f.endsWith('.js')).sort(), files.sort(), 'run vendor/update.sh');
  for (const f of files) assert.ok((await readFile(new URL(`dist/${f}`, pkg))).equals(await readFile(new URL(f, vend))), `${f} differs: run vendor/update.sh`);
});
