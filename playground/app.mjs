// The page: controls, stepping and the pictures. The module, the pools and
// the session live in the worker (worker.mjs); this side only renders.
import { drawTree, drawPools, drawCounters, drawHits, eventLine } from './render.mjs';

const $ = (id) => document.getElementById(id);
const t0 = performance.now();
const worker = new Worker(new URL('./worker.mjs', import.meta.url), { type: 'module' });

// What the page knows: the step records so far (for the logs) and the latest snapshot.
const st = { records: [], snap: null, vocab: null, words: new Map(), playing: false, total: 0, name: '', firstTreeMs: null,
  lastRun: null, errors: [], ready: false };
window.__rkv = st; // for the browser test and the curious

const MAX_LOG = 400;

function word(t) { return st.vocab ? st.vocab[t] ?? `#${t}` : String(t); }

function send(m) { worker.postMessage(m); }

function settingsFromForm() {
  const f = new FormData($('settings')); const s = {};
  for (const k of ['page_size', 'capacity', 'host_capacity', 'transfer_delay', 'swa_window', 'mamba_chunk', 'mamba_cap']) s[k] = Number(f.get(k));
  s.policy = f.get('policy'); s.write_policy = f.get('write_policy'); s.components = f.get('components');
  return s;
}

function fillForm(s) {
  const f = $('settings');
  for (const k of ['page_size', 'policy', 'capacity', 'host_capacity', 'write_policy', 'transfer_delay', 'components', 'swa_window', 'mamba_chunk', 'mamba_cap']) if (f.elements[k]) f.elements[k].value = s[k];
}

function status(text, bad = false) { $('status').textContent = text; $('status').style.color = bad ? '#b91c1c' : ''; }

function render() {
  const snap = st.snap; if (!snap) return;
  const rec = st.records[st.records.length - 1];
  drawTree($('tree'), snap, rec ? rec.touched : [], st.vocab ? word : null);
  drawPools($('pools'), snap, snap.transfers);
  drawCounters($('counters'), snap.stats);
  drawHits($('hits'), snap.hits, Math.max(st.total, snap.steps));
  $('pos').textContent = `step ${snap.steps} · event ${snap.pos}/${st.total}${snap.done ? ' ✓' : ''}`;
  $('treeinfo').textContent = `${snap.nodes.length} nodes`;
  $('steplabel').textContent = rec ? `step ${rec.step}: ${rec.label}` : '';
  $('back').disabled = snap.steps === 0; $('fwd').disabled = snap.done; $('end').disabled = snap.done;
  if (st.firstTreeMs === null) { st.firstTreeMs = performance.now() - t0; status(`ready: radixkv.wasm in a worker, first tree in ${st.firstTreeMs.toFixed(0)} ms`); }
}

function appendRecords(recs) {
  const log = $('log'); const evs = $('events');
  for (const el of log.querySelectorAll('.cur')) el.classList.remove('cur');
  for (const r of recs) {
    st.records.push(r);
    const head = document.createElement('li');
    head.className = `step cur${r.error ? ' err' : ''}`; head.dataset.step = r.step;
    head.textContent = `${r.step}. ${r.label || r.kind}${r.error ? ` — error: ${r.error}` : ''}`;
    log.appendChild(head);
    for (const e of r.entries) {
      const li = document.createElement('li'); li.className = e.op === 'transfer' ? 'act xfer' : 'act'; li.dataset.step = r.step;
      li.textContent = e.text; li.title = e.text; log.appendChild(li);
      for (const a of e.actions) {
        const al = document.createElement('li'); al.className = 'act'; al.dataset.step = r.step;
        al.textContent = `  ↳ ${a.name}: ${a.meaning}`; al.title = al.textContent; log.appendChild(al);
      }
    }
    for (const e of r.events) {
      const { cls, text } = eventLine(e);
      const li = document.createElement('li'); li.className = cls; li.dataset.step = r.step; li.textContent = `${r.step}. ${text}`; evs.appendChild(li);
    }
    if (r.error) st.errors.push(r.error);
  }
  while (log.children.length > MAX_LOG) log.firstChild.remove();
  while (evs.children.length > MAX_LOG) evs.firstChild.remove();
  log.scrollTop = log.scrollHeight; evs.scrollTop = evs.scrollHeight;
}

function rewind(to) {
  st.records = st.records.filter((r) => r.step <= to);
  for (const box of [$('log'), $('events')]) for (const li of [...box.children]) if (Number(li.dataset.step) > to) li.remove();
  const last = [...$('log').querySelectorAll('.step')].pop(); if (last) last.classList.add('cur');
}

worker.onmessage = (ev) => {
  const m = ev.data;
  switch (m.type) {
    case 'ready': st.ready = true; open($('scenario').value); break;
    case 'opened':
      st.records = []; $('log').replaceChildren(); $('events').replaceChildren();
      st.vocab = m.vocab; st.total = m.total; st.name = m.name; st.snap = m.snapshot; fillForm(m.settings);
      if ($('scenario').value !== m.name && [...$('scenario').options].some((o) => o.value === m.name)) $('scenario').value = m.name;
      render(); break;
    case 'stepped': {
      const a = performance.now();
      appendRecords(m.records); st.snap = m.snapshot; if (m.total) st.total = m.total;
      render();
      st.renderMs = (st.renderMs ?? 0) + performance.now() - a; st.renders = (st.renders ?? 0) + 1;
      // Every step is drawn (the DOM updated) before the next is asked for;
      // the browser paints between the message tasks at its frame rate.
      if (m.running) send({ type: 'ack' });
      if (m.run) { st.lastRun = m.run; setPlaying(false); status(`ran ${m.run.steps} steps in ${m.run.ms.toFixed(0)} ms (${Math.round((m.run.steps / m.run.ms) * 1000)} steps/s, rendering ${m.run.render ? 'on' : 'off'})`); }
      break;
    }
    case 'rewound': rewind(m.to); st.snap = m.snapshot; render(); break;
    case 'warn': status(m.message, true); break;
    case 'error': st.errors.push(m.message); status(m.message, true); setPlaying(false); break;
  }
};
worker.onerror = (e) => { status(`worker: ${e.message}`, true); };

function open(name, settings) { setPlaying(false); send({ type: 'open', name, settings }); }

function setPlaying(on, limit) {
  if (st.playing === on) return;
  st.playing = on; $('play').textContent = on ? 'pause' : 'play';
  if (on) send({ type: 'run', render: $('render').checked, limit }); else send({ type: 'pause' });
}
st.run = (limit) => setPlaying(true, limit);

const step = () => { if (!st.playing && st.snap && !st.snap.done) send({ type: 'step' }); };
const back = () => { if (!st.playing && st.snap && st.snap.steps > 0) send({ type: 'back' }); };
const end = () => { if (!st.playing) setPlaying(true); };

$('fwd').onclick = step; $('back').onclick = back; $('end').onclick = end;
$('play').onclick = () => setPlaying(!st.playing);
$('reset').onclick = () => { setPlaying(false); send({ type: 'reopen', settings: settingsFromForm() }); };
$('scenario').onchange = () => open($('scenario').value);
$('settings').onsubmit = (e) => { e.preventDefault(); setPlaying(false); send({ type: 'reopen', settings: settingsFromForm() }); };

// Typed tokens: numbers stay numbers, words map through the vocabulary.
function typedTokens() {
  const raw = $('tokens').value.trim(); if (!raw) return [];
  const parts = raw.split(/\s+/);
  if (parts.every((p) => /^\d+$/.test(p))) return parts.map(Number);
  if (!st.vocab) st.vocab = [''];
  return parts.map((w) => { let k = st.vocab.indexOf(w); if (k < 0) { k = st.vocab.length; st.vocab.push(w); } return k; });
}
$('tokens').oninput = () => {
  const raw = $('tokens').value.trim();
  const parts = raw ? raw.split(/\s+/) : [];
  const words = parts.every((p) => /^\d+$/.test(p));
  $('mapping').textContent = words ? (parts.length ? `${parts.length} numeric tokens` : '') : parts.map((w) => { const k = st.vocab ? st.vocab.indexOf(w) : -1; return `${w}→${k < 0 ? 'new' : k}`; }).join('  ');
};
for (const b of document.querySelectorAll('[data-op]')) {
  b.onclick = () => {
    if (st.playing) return;
    const op = b.dataset.op; const ns = $('salt').value ? { cache_salt: $('salt').value } : {};
    const n = Math.max(1, Number($('evictn').value) || 1);
    const ev = { request: { t: 'request', ns, tokens: typedTokens(), name: 'typed request' }, match: { t: 'match', ns, tokens: typedTokens() },
      lock: { t: 'lock' }, unlock: { t: 'unlock' }, evict: { t: 'evict', n }, evict_host: { t: 'evict_host', n },
      arrive_m: { t: 'arrive_m', ns, tokens: typedTokens() }, insert: { t: 'insert', ns, tokens: typedTokens() }, prefill_m: { t: 'prefill_m' }, finish_m: { t: 'finish_m' },
      backup: { t: 'backup' }, load_back: { t: 'load_back' } }[op];
    if (['request', 'match', 'arrive_m', 'insert'].includes(op) && ev.tokens.length === 0) { status('type some tokens first', true); return; }
    send({ type: 'op', event: ev });
  };
}

// Command logs from radixkv record: drag and drop, or pick a file.
async function loadLog(file) {
  const text = await file.text();
  setPlaying(false); send({ type: 'open', log: text, name: file.name });
}
const drop = $('drop');
drop.ondragover = (e) => { e.preventDefault(); drop.classList.add('over'); };
drop.ondragleave = () => drop.classList.remove('over');
drop.ondrop = (e) => { e.preventDefault(); drop.classList.remove('over'); const f = e.dataTransfer.files[0]; if (f) loadLog(f); };
$('file').onchange = () => { const f = $('file').files[0]; if (f) loadLog(f); };
window.addEventListener('dragover', (e) => e.preventDefault());
window.addEventListener('drop', (e) => e.preventDefault());

document.addEventListener('keydown', (e) => {
  if (e.target.closest('input, select, textarea')) return;
  const k = e.key;
  if (k === 'ArrowRight' || k === 'j') { step(); e.preventDefault(); }
  else if (k === 'ArrowLeft' || k === 'k') { back(); e.preventDefault(); }
  else if (k === ' ') { setPlaying(!st.playing); e.preventDefault(); }
  else if (k === 'Home') { $('reset').click(); e.preventDefault(); }
  else if (k === 'End') { end(); e.preventDefault(); }
});
let resizeT = 0;
window.addEventListener('resize', () => { clearTimeout(resizeT); resizeT = setTimeout(render, 100); });
