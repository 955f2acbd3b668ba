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

export function num(n) { return Number.isInteger(n) ? String(n) : n.toFixed(2); }
