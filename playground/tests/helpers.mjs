// Shared by the Node tests: the module through the vendored shim.
import { readFile } from 'node:fs/promises';
import { compile, instantiate } from '../wasi.mjs';

const root = new URL('../../', import.meta.url);
export const repoFile = (p) => new URL(p, root);
let mod = null;
/** guest returns a Guest over a fresh instance of wasmmod/radixkv.wasm. */
export async function guest() {
  mod ??= await compile(await readFile(repoFile('wasmmod/radixkv.wasm')));
  return instantiate(mod, (l) => { throw new Error(l); });
}
export const hex = (b) => Buffer.from(b).toString('hex');
export const unhex = (s) => new Uint8Array(Buffer.from(s, 'hex'));
