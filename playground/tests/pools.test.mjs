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
