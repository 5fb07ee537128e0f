// Pictures of a session snapshot (session.mjs): the tree as an icicle
// (x is the token offset, so a node's width is its token count; one row
// per leaf), the pools, the counters and the hit-rate chart. Plain SVG/DOM.
const SVG = 'http://www.w3.org/2000/svg';
const el = (name, attrs = {}, parent) => {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
};
const fmt = (n) => Number(n).toLocaleString('en-US');

/** residency classifies a node: root, device, host, both or tomb. */
export function residency(n, root) {
  if (n.id === root) return 'root';
  if (n.device && n.swa === -1) return 'tomb'; // an SWA tombstone: Full KV without its window's SWA KV
  if (n.device && n.host) return 'both';
  if (n.device) return 'device';
  if (n.host) return 'host';
  return 'tomb';
}
const FILL = { root: '#374151', device: '#3b82f6', host: '#f59e0b', both: '#10b981', tomb: '#cbd5e1' };

/** drawTree renders snap into svg (width × height user units = its box). */
export function drawTree(svg, snap, touched = [], word = null) {
  const W = Math.max(svg.clientWidth || 800, 300); const H = Math.max(svg.clientHeight || 400, 200);
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  svg.replaceChildren();
  const byId = new Map(snap.nodes.map((n) => [n.id, n]));
  const root = byId.get(snap.root);
  if (!root) return { nodes: 0 };
  // Depth in tokens and leaf rows.
  let rows = 0; let maxEnd = 1;
  const place = (n, start) => {
    n.x0 = start; n.x1 = start + n.tokens; maxEnd = Math.max(maxEnd, n.x1);
    const kids = n.children.map((c) => byId.get(c)).filter(Boolean);
    n.r0 = rows;
    if (kids.length === 0) rows++;
    for (const k of kids) place(k, n.x1);
    n.r1 = Math.max(rows, n.r0 + 1);
  };
  place(root, 0);
  const rootW = 18; const padR = 4;
  const sx = (W - rootW - padR) / maxEnd; const rh = Math.min(56, (H - 4) / Math.max(rows, 1));
  const touch = new Set(touched);
  const g = el('g', {}, svg);
  for (const n of snap.nodes) {
    if (n.x0 === undefined) continue;
    const kind = residency(n, snap.root);
    const x = n.id === snap.root ? 0 : rootW + n.x0 * sx; const w = n.id === snap.root ? rootW - 2 : Math.max(n.tokens * sx - 1.5, 3);
    const y = 2 + n.r0 * rh; const h = Math.max((n.r1 - n.r0) * rh - 2, 2);
    const node = el('g', { class: `node ${kind}`, 'data-id': n.id, 'data-kind': kind }, g);
    const r = el('rect', { x, y, width: w, height: h, rx: 3, fill: FILL[kind] }, node);
    if (n.pending) { r.setAttribute('stroke', '#7c3aed'); r.setAttribute('stroke-width', 2); r.setAttribute('stroke-dasharray', '4 2'); }
    if (touch.has(n.id)) { r.setAttribute('stroke', '#e11d48'); r.setAttribute('stroke-width', 2.5); node.classList.add('touched'); }
    if (n.pinned) r.setAttribute('opacity', 0.7);
    const rc = snap.receipts[n.id] ?? 0;
    const words = word ? n.key.map(word).join(' ') : n.key.join(' ');
    el('title', {}, node).textContent = `node ${n.name ?? n.id}${n.ns ? ` (tenant ${n.ns})` : ''}\n${n.tokens} tokens: ${words}${n.tokens > n.key.length ? ' …' : ''}\n`
      + `device ${n.device} · host ${n.host}${n.swa !== null && n.swa !== undefined ? ` · swa ${Math.max(n.swa, 0)}` : ''}${n.mamba ? ' · mamba state' : ''} · lock ${n.lock} · host lock ${n.host_lock} · receipts ${rc} · hits ${n.hits}${n.pending ? '\nwrite-through in flight' : ''}${n.pinned ? '\npinned by a load-back' : ''}`;
    if (n.id !== snap.root && w > 34 && h >= 12) {
      const label = el('text', { x: x + 4, y: y + Math.min(h / 2, 11) + 3.5, fill: kind === 'tomb' || kind === 'host' ? '#111827' : '#fff' }, node);
      const room = Math.floor((w - 8) / 6.1);
      let s = `${n.tokens}${n.ns ? ' ' + n.ns : ''}: ${words}`;
      if (s.length > room) s = s.slice(0, Math.max(room - 1, 1)) + '…';
      label.textContent = s;
    }
    if (n.mamba && w > 10 && h > 10) {
      const m = el('g', { class: 'mamba' }, node);
      el('circle', { cx: x + w - 7, cy: y + h - 7, r: 5.5, fill: '#7c3aed' }, m);
      el('text', { x: x + w - 10, y: y + h - 4, fill: '#fff' }, m).textContent = 'M';
    }
    if ((n.lock > 0 || rc > 0) && n.id !== snap.root) {
      const bx = x + w - 2; const by = y + 1;
      const txt = `L${n.lock}·R${rc}`; const bw = txt.length * 6 + 6;
      if (w > bw + 4 || h > 24) {
        const b = el('g', { class: 'lockbadge' }, node);
        el('rect', { x: bx - bw, y: by, width: bw, height: 11, rx: 5, fill: '#111827' }, b);
        el('text', { x: bx - bw + 3, y: by + 8.5, fill: '#fff' }, b).textContent = txt;
      }
    }
  }
  return { nodes: snap.nodes.length, rows };
}

/** drawPools renders the occupancy bar of each pool. */
export function drawPools(box, snap, inflight) {
  box.replaceChildren();
  for (const p of snap.pools) {
    const d = document.createElement('div'); d.className = 'pool';
    const pct = p.cap ? (100 * p.used) / p.cap : 0;
    const color = p.name.startsWith('host') ? '#f59e0b' : '#3b82f6';
    d.innerHTML = `<div class="lab"><span>${p.name}</span><span class="num">${fmt(p.used)} / ${fmt(p.cap)}</span></div><div class="bar"><div class="fill" style="width:${pct.toFixed(1)}%;background:${color}"></div></div>`;
    box.appendChild(d);
  }
  const x = document.createElement('div'); x.className = 'pool';
  x.innerHTML = `<div class="lab"><span>transfers in flight</span><span class="num">${inflight.length}</span></div>`;
  box.appendChild(x);
}

const COUNTERS = [
  ['hit rate', (s) => (s.input_tokens ? `${((100 * (s.matched_tokens + s.host_hit_tokens)) / s.input_tokens).toFixed(1)}%` : '—')],
  ['requests', (s) => `${fmt(s.finished)} / ${fmt(s.requests)}`], ['input tokens', (s) => fmt(s.input_tokens)],
  ['device hits', (s) => fmt(s.matched_tokens)], ['host hits', (s) => fmt(s.host_hit_tokens)], ['computed', (s) => fmt(s.computed_tokens)],
  ['evicted', (s) => fmt(s.evicted_nodes)], ['evicted tokens', (s) => fmt(s.evicted_tokens)],
  ['backups', (s) => fmt(s.backups)], ['write-throughs', (s) => fmt(s.write_throughs)], ['demoted', (s) => fmt(s.demoted)],
  ['load-backs', (s) => fmt(s.load_backs)], ['host evicts', (s) => fmt(s.host_evictions)], ['bytes moved', (s) => fmt(s.bytes_moved)],
  ['SWA freed', (s) => fmt(s.swa_evicted + s.swa_window_freed)], ['Mamba forks', (s) => fmt(s.mamba_forks)],
  ['states donated', (s) => fmt(s.mamba_donated)], ['states evicted', (s) => fmt(s.mamba_evicted)],
  ['canary checks', (s) => fmt(s.canary_checked)], ['mismatches', (s) => fmt(s.canary_mismatches)],
];

/** drawCounters fills the counters list (a fixed set of rows: no layout jumps). */
export function drawCounters(dl, stats) {
  if (!dl.children.length) {
    for (const [name] of COUNTERS) {
      const dt = document.createElement('dt'); dt.textContent = name; const dd = document.createElement('dd');
      dd.dataset.counter = name; dl.append(dt, dd);
    }
  }
  COUNTERS.forEach(([, f], i) => { dl.children[2 * i + 1].textContent = f(stats); });
}

/** drawHits plots the cumulative hit rate after each finished request. */
export function drawHits(svg, hits, total) {
  svg.replaceChildren();
  for (const y of [0.25, 0.5, 0.75]) el('line', { x1: 0, x2: 300, y1: 90 - 86 * y, y2: 90 - 86 * y, stroke: '#e5e7eb', 'stroke-width': 1 }, svg);
  el('text', { x: 3, y: 12, fill: '#6b7280', 'font-size': 9 }, svg).textContent = '100%';
  el('text', { x: 3, y: 88, fill: '#6b7280', 'font-size': 9 }, svg).textContent = '0';
  if (!hits.length) return;
  const maxX = Math.max(total, hits[hits.length - 1].step, 1);
  const pts = hits.map((h) => `${((300 * h.step) / maxX).toFixed(1)},${(90 - 2 - 86 * h.rate).toFixed(1)}`).join(' ');
  el('polyline', { points: pts, fill: 'none', stroke: '#10b981', 'stroke-width': 2, 'vector-effect': 'non-scaling-stroke' }, svg);
  const last = hits[hits.length - 1];
  el('text', { x: 296, y: 12, fill: '#047857', 'font-size': 10, 'text-anchor': 'end' }, svg).textContent = `${(100 * last.rate).toFixed(1)}%`;
}

const EVENT_NAMES = { 1: 'stored', 2: 'removed', 3: 'cleared' };
/** eventLine describes a KV cache event in one line. */
export function eventLine(e) {
  const kind = EVENT_NAMES[e.kind] ?? e.kind; const n = e.block_hashes.length;
  const h = n ? ` ${e.block_hashes[0].slice(0, 8)}${n > 1 ? '…' : ''}` : '';
  return { cls: `ev-${kind}`, text: `${kind} ${n} block(s)${e.block_size ? ` of ${e.block_size}` : ''} on ${e.medium ? 'cpu' : 'gpu'}${h}${e.cache_salt ? ` tenant ${e.cache_salt}` : ''}` };
}
