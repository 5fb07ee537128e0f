// The Web Worker that owns radixkv.wasm and the session: the page sends
// commands, the worker answers with step records and tree snapshots.
import { compile, instantiate } from './wasi.mjs';
import { Session } from './session.mjs';
import { scenarios } from './scenarios.mjs';
import { parseLog, logScenario } from './cmdlog.mjs';

let guest = null; let session = null; let scenario = null; let running = false; let acked = null;

const post = (m) => postMessage(m);
const fail = (e) => post({ type: 'error', message: e && e.message ? e.message : String(e) });

async function boot() {
  const t0 = performance.now();
  const resp = await fetch(new URL('../wasmmod/radixkv.wasm', import.meta.url));
  if (!resp.ok) throw new Error(`radixkv.wasm: HTTP ${resp.status}`);
  const mod = await compile(await resp.arrayBuffer());
  guest = await instantiate(mod, (l) => post({ type: 'warn', message: l }));
  post({ type: 'ready', bootMs: performance.now() - t0, abi: guest.abiVersion() });
}

function open(sc, over) {
  scenario = sc;
  session = new Session(guest, { ...sc.settings, ...over }, sc.script.slice());
  post({ type: 'opened', name: sc.name, title: sc.title, settings: session.settings, vocab: sc.vocab ? sc.vocab.words : null,
    total: sc.script.length, snapshot: session.snapshot() });
}

function stepOnce() {
  const rec = session.step();
  return rec;
}

async function run(render, limit = Infinity) {
  running = true;
  // Rendering off is the fast path: no per-call log lines (step labels,
  // errors and events are still recorded).
  if (!render) session.ctl.setLog(null);
  const t0 = performance.now(); let steps = 0; const recs = [];
  while (running && !session.done && steps < limit) {
    const rec = stepOnce(); steps++;
    if (render) {
      const p = new Promise((res) => { acked = res; });
      post({ type: 'stepped', records: [rec], snapshot: session.snapshot(), running: true });
      await p;
    } else {
      recs.push(rec);
      if (recs.length > 400) recs.shift();
    }
  }
  running = false;
  const ms = performance.now() - t0;
  if (!render) session.ctl.setLog((e) => session.entries.push(e));
  post({ type: 'stepped', records: render ? [] : recs, snapshot: session.snapshot(), running: false, run: { steps, ms, render } });
}

onmessage = async (ev) => {
  const m = ev.data;
  try {
    switch (m.type) {
      case 'open': {
        const sc = m.log ? logScenario(parseLog(m.log), m.name ?? 'log') : scenarios[m.name]();
        open(sc, m.settings ?? {});
        break;
      }
      case 'reopen': open(scenario, m.settings ?? {}); break;
      case 'step': {
        const records = [];
        for (let i = 0; i < (m.n ?? 1) && !session.done; i++) records.push(stepOnce());
        post({ type: 'stepped', records, snapshot: session.snapshot(), running: false });
        break;
      }
      case 'back': {
        const to = Math.max(0, session.steps - (m.n ?? 1));
        session.runTo(to);
        post({ type: 'rewound', to, snapshot: session.snapshot() });
        break;
      }
      case 'op': { // a manual operation, inserted at the current position
        session.script.splice(session.pos, 0, m.event);
        const rec = stepOnce();
        post({ type: 'stepped', records: [rec], snapshot: session.snapshot(), running: false, total: session.script.length });
        break;
      }
      case 'run': run(!!m.render, m.limit ?? Infinity).catch(fail); break;
      case 'pause': running = false; break;
      case 'ack': if (acked) { const a = acked; acked = null; a(); } break;
      default: throw new Error(`unknown command ${m.type}`);
    }
  } catch (e) { fail(e); }
};

boot().catch(fail);
