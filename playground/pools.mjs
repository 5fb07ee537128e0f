// Mock KV pools that hold real bytes, and the KV canary.
//
// A pool is `capacity` slots of `slotBytes` bytes. The controller writes a
// canary record into every slot it fills, derived from the namespace, the
// position and the token prefix, and poisons (zeroes) a slot when it frees
// it; a match whose slots do not hold exactly the records of that prefix
// is a wrong slot, a recycled slot or a cross-tenant leak.

export const SLOT_BYTES = 16;
const MAGIC = 0x4b565243; // "CRVK"

/** PoolError: an allocation the pool cannot serve or a bad free. */
export class PoolError extends Error {}

export class Pool {
  constructor(name, capacity, slotBytes = SLOT_BYTES) {
    if (!Number.isInteger(capacity) || capacity < 0) throw new PoolError(`${name}: capacity ${capacity} is not a non-negative integer`);
    if (!Number.isInteger(slotBytes) || slotBytes < SLOT_BYTES) throw new PoolError(`${name}: slots need at least ${SLOT_BYTES} bytes for the canary`);
    this.name = name; this.capacity = capacity; this.slotBytes = slotBytes;
    this.data = new Uint8Array(capacity * slotBytes);
    this.used = new Uint8Array(capacity);
    // A stack of free slots, lowest on top: fresh pools hand out 0, 1, 2 ...
    this.freeList = new Int32Array(capacity);
    for (let i = 0; i < capacity; i++) this.freeList[i] = capacity - 1 - i;
    this.nFree = capacity;
  }

  get available() { return this.nFree; }
  get inUse() { return this.capacity - this.nFree; }

  /** alloc appends n fresh slots to dst; all or nothing. */
  alloc(n, dst = []) {
    if (n > this.nFree) throw new PoolError(`${this.name}: ${n} slots wanted, ${this.nFree} free of ${this.capacity}`);
    for (let i = 0; i < n; i++) {
      const s = this.freeList[--this.nFree];
      this.used[s] = 1;
      dst.push(s);
    }
    return dst;
  }

  check(s) {
    if (!Number.isInteger(s) || s < 0 || s >= this.capacity) throw new PoolError(`${this.name}: slot ${s} is out of range [0, ${this.capacity})`);
  }

  /** free returns slots, zeroing their bytes; a slot not in use is an error and nothing is freed. */
  free(slots) {
    for (const s of slots) {
      this.check(s);
      if (!this.used[s]) throw new PoolError(`${this.name}: slot ${s} freed while free (double free or never allocated)`);
    }
    const seen = new Set(slots);
    if (seen.size !== slots.length) throw new PoolError(`${this.name}: a slot is freed twice in one call`);
    for (const s of slots) {
      this.used[s] = 0;
      this.data.fill(0, s * this.slotBytes, (s + 1) * this.slotBytes);
      this.freeList[this.nFree++] = s;
    }
  }

  write(s, bytes) { this.check(s); this.data.set(bytes.subarray(0, this.slotBytes), s * this.slotBytes); }
  read(s) { this.check(s); return this.data.subarray(s * this.slotBytes, (s + 1) * this.slotBytes); }

  /** copyFrom copies slot src of pool from into slot dst of this pool. */
  copyFrom(dst, from, src) {
    this.check(dst); from.check(src);
    this.data.set(from.read(src), dst * this.slotBytes);
    return from.slotBytes;
  }
}

// The canary hash: two 32-bit FNV-1a lanes over the token prefix.
/** canarySeed hashes a namespace. */
export function canarySeed(ns = {}) {
  let a = 0x811c9dc5, b = 0x01000193 ^ 0x5bd1e995;
  const s = `${ns.extra_key ?? ''}\u0000${ns.cache_salt ?? ''}\u0000${ns.lora ?? ''}`;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193); b = Math.imul(b ^ c, 0x5bd1e995) ^ (b >>> 15);
  }
  return [a >>> 0, b >>> 0];
}

/** canaryStep extends a prefix hash by one token. */
export function canaryStep(h, tok) {
  let a = Math.imul(h[0] ^ (tok & 0xffff), 0x01000193); a = Math.imul(a ^ (tok >>> 16), 0x01000193);
  let b = Math.imul(h[1] ^ tok, 0x5bd1e995); b ^= b >>> 13; b = Math.imul(b, 0x5bd1e995);
  return [a >>> 0, b >>> 0];
}

/** canaryRecord writes the record of position pos with prefix hash h (through that position). */
export function canaryRecord(out, h, pos) {
  const dv = new DataView(out.buffer, out.byteOffset, SLOT_BYTES);
  dv.setUint32(0, MAGIC, true); dv.setUint32(4, pos >>> 0, true); dv.setUint32(8, h[0], true); dv.setUint32(12, h[1], true);
  return out;
}

/** sameRecord compares a slot's bytes with a record. */
export function sameRecord(slot, want) {
  for (let i = 0; i < SLOT_BYTES; i++) if (slot[i] !== want[i]) return false;
  return true;
}
