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

const formatKey = 'berth.specFormat';

// specPane is a spec's pane with a YAML/JSON toggle (the workload and instance pages).
// JSON is shown until YAML is asked for: the emitter (yaml.js) is loaded then, so no
// page's first paint loads more. The choice is kept in the tab for the next pane.
export function specPane(id) {
  const pre = h('pre', { id });
  let value = null;
  let format = sessionStorage.getItem(formatKey) === 'yaml' ? 'yaml' : 'json';
  let toYAML = null;
  const buttons = {};
  const draw = async () => {
    if (value === null) return;
    if (format === 'yaml') {
      toYAML ??= (await import('./yaml.js')).toYAML;
      if (format !== 'yaml') return; // switched back meanwhile
      pre.textContent = toYAML(value);
    } else {
      pre.textContent = JSON.stringify(value, null, 2);
    }
    pre.dataset.format = format;
    for (const [f, b] of Object.entries(buttons)) b.setAttribute('aria-pressed', String(f === format));
  };
  for (const f of ['json', 'yaml']) {
    buttons[f] = h('button', { type: 'button', class: 'format', dataset: { format: f }, onclick: () => {
      format = f;
      sessionStorage.setItem(formatKey, f);
      draw();
    } }, f.toUpperCase());
  }
  const toggle = h('span', { class: 'format-toggle', role: 'group', 'aria-label': 'spec format' }, buttons.json, buttons.yaml);
  // show draws v (a value JSON can hold) in the chosen format.
  const show = (v) => { value = v; draw(); };
  return { pre, toggle, show };
}
