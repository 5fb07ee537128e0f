// Instantiates radixkv.wasm through @bjorn3/browser_wasi_shim, the same
// way in a browser worker and in Node: the module is a WASI preview 1
// reactor, so it is initialised (its _initialize export) and never started.
import { WASI, OpenFile, File, ConsoleStdout } from './vendor/browser_wasi_shim/index.js';
import { Guest } from '../abi/js/codec.mjs';

/** compile compiles the module bytes once; instances share the code. */
export function compile(bytes) { return WebAssembly.compile(bytes); }

/**
 * instantiate returns a codec Guest over a fresh module instance: its own
 * memory, stdin empty, stdout and stderr passed to log (the module writes
 * nothing there unless it panics).
 */
export async function instantiate(module, log = () => {}) {
  const fds = [
    new OpenFile(new File([])),
    ConsoleStdout.lineBuffered((l) => log(`radixkv.wasm stdout: ${l}`)),
    ConsoleStdout.lineBuffered((l) => log(`radixkv.wasm stderr: ${l}`)),
  ];
  const wasi = new WASI([], [], fds, { debug: false });
  const instance = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: wasi.wasiImport });
  wasi.initialize(instance);
  return new Guest(instance);
}
