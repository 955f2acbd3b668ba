// Building the page. Text always goes in as text (textContent), never as markup: names,
// messages and logs come from users and workloads.

export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k in el && typeof v !== 'string') el[k] = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(el) { el.replaceChildren(); return el; }

const okPhases = new Set(['Running', 'Ready', 'Finish', 'Completed']);
const warnPhases = new Set(['Staging', 'Starting', 'Deploying', 'Updating', 'Operating', 'Killing', 'Paused', 'NotReady', 'Suspended', 'Pending']);

export function badge(phase) {
  const p = phase || 'Unknown';
  const cls = okPhases.has(p) ? 'ok' : warnPhases.has(p) ? 'warn' : 'bad';
  return h('span', { class: 'badge ' + cls, dataset: { phase: p } }, p);
}

export function age(ts) {
  if (!ts) return '';
  const s = Math.max(0, (Date.now() - new Date(ts).getTime()) / 1000);
  if (s < 60) return Math.floor(s) + 's';
  if (s < 3600) return Math.floor(s / 60) + 'm';
  if (s < 86400) return Math.floor(s / 3600) + 'h';
  return Math.floor(s / 86400) + 'd';
}

export function table(headers, rows, props) {
  return h('table', props, h('thead', {}, h('tr', {}, headers.map((x) => h('th', {}, x)))), h('tbody', {}, rows));
}

export function errorBox(err) { return h('p', { class: 'error', role: 'alert' }, String(err && err.message ? err.message : err)); }

export function chips(obj) {
  return h('span', { class: 'chips' }, Object.entries(obj || {}).map(([k, v]) => h('span', {}, v === '' ? k : `${k}=${v}`)));
}

// link is an anchor to a console route.
export function link(href, text) { return h('a', { href }, text); }

export function mib(n) { return n >= 1024 ? (n / 1024).toFixed(1) + ' GiB' : Math.round(n) + ' MiB'; }

// bytes is a size in the unit that suits it: 512 B, 20 KiB, 1.5 MiB, 2.0 GiB (a fresh
// etcd's few hundred KiB must not read "0 MiB").
export function bytes(n) {
  if (!Number.isFinite(n) || n < 0) return '';
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${v >= 100 ? Math.round(v) : v.toFixed(1).replace(/\.0$/, '')} ${units[i]}`;
}

export function num(n) { return Number.isInteger(n) ? String(n) : n.toFixed(2); }
