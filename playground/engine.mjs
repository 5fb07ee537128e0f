// One cache instance behind the ABI: requests encoded and responses decoded
// by the shared codec (abi/js/codec.mjs), through a Guest (see wasi.mjs).
import { encodeRequest, decodeResponse, OPS, CODES } from '../abi/js/codec.mjs';

const CODE_NAMES = Object.fromEntries(Object.entries(CODES).map(([k, v]) => [v, k]));
const OP_NAMES = Object.fromEntries(Object.entries(OPS).map(([k, v]) => [v, k]));

/** EngineError is an error response: op, code (a CODES value) and the module's message. */
export class EngineError extends Error {
  constructor(op, m) {
    super(`${op}: ${CODE_NAMES[m.code] ?? m.code}: ${m.message}`);
    this.op = op; this.code = m.code; this.actions = m.actions;
  }
}

/** opName names an op code. */
export const opName = (op) => OP_NAMES[op] ?? `op 0x${op.toString(16)}`;

/**
 * Engine is one radixkv instance in a Guest. call(op, body) sends one
 * request and returns the decoded response; an error response throws
 * EngineError. onCall, when set, sees every call (for the action log);
 * tape, when an array, collects [request bytes, response bytes].
 */
export class Engine {
  constructor(guest, handle, config) {
    this.guest = guest; this.handle = handle; this.config = config; this.id = 1;
    this.onCall = null; this.tape = null;
  }

  /** create makes an instance with config (the create op's JSON form). */
  static create(guest, config) {
    const e = new Engine(guest, 0, config);
    const m = e.raw({ op: 'create', instance: 0, id: e.id++, config });
    if (m.status !== 0) throw new EngineError('create', m);
    e.handle = m.handle;
    return e;
  }

  raw(q) {
    const req = encodeRequest(q);
    const resp = this.guest.call(req);
    if (this.tape) this.tape.push([req, resp]);
    return decodeResponse(resp);
  }

  call(op, body = {}) {
    const m = this.raw({ op, instance: this.handle, id: this.id++, ...body });
    if (this.onCall) this.onCall(op, body, m);
    if (m.status !== 0) throw new EngineError(op, m);
    return m;
  }

  destroy() { this.raw({ op: 'destroy', instance: this.handle, id: this.id++ }); }
}
