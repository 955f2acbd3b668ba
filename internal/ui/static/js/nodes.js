// Nodes: a page of nodes with their capacity beside what their task groups reserve (the
// scheduler's accounting, in the same answer) and what they use, measured by each node's
// agent (GET /v1/nodes/NAME/usage), live through the nodes' watch; disable, enable and
// drain, as the token allows. A node's row opens to small live graphs of its CPU and
// memory: the host's and its instances' against what it may allocate and reserves.
import { call, get, watch, query } from './api.js';
import { h, badge, age, chips, link, errorBox, mib, num, bytes } from './dom.js';
import { keepWatching, withParams, sleep } from './live.js';
import { addNodeSample } from './usage.js';
import { graph } from './graph.js';
import { nodeLends, lendsText } from './policyview.js';

const pageSize = 50;
// The rows' measured numbers are read every listPollMs, at most listParallel nodes at a
// time (each read reaches the node's agent); an open node's graphs every graphPollMs.
const listPollMs = 10000;
const listParallel = 4;
const graphPollMs = 3000;

function node404(problem, err) { problem.replaceChildren(errorBox(err)); }

function gpus(n) {
  const cards = (n.spec.gpus || []).length || ((n.spec.capacity || {}).extended || {})['nvidia.com/gpu'] || 0;
  return cards ? String(cards) : '';
}

// cpuCell reads "1.25 used · 2 reserved / 7.5": measured (… until read), reserved,
// allocatable.
function cpuCell(alloc, u, m) {
  const used = m ? (m.windowSeconds > 0 ? num(m.host.cpuCores) : '…') : '…';
  return [h('span', { class: 'used' }, used), ' used · ', reservedOf(num(u.cpu || 0), u.overheadCPU, num), ` / ${num(alloc.cpu || 0)}`];
}

function memCell(alloc, u, m) {
  const used = m ? bytes(m.host.memoryBytes) : '…';
  return [h('span', { class: 'used' }, used), ' used · ', reservedOf(mib(u.memoryMB || 0), u.overheadMemoryMB, mib), ` / ${mib(alloc.memoryMB || 0)}`];
}

// reservedOf reads "288 MiB reserved" with what of it is the executors': each task group
// reserves its tasks' requests and its executor's overhead (docs/scheduling.md), which is
// why 3 tasks of 32 MiB reserve 288 MiB.
function reservedOf(text, overhead, fmt) {
  if (!overhead) return `${text} reserved`;
  const why = `${fmt(overhead)} of it is the executors' overhead (each running task group reserves its tasks' requests and its executor's), the rest the tasks' requests`;
  return h('span', { class: 'reserved', title: why }, `${text} reserved`, h('span', { class: 'muted overhead' }, ` (${fmt(overhead)} executors)`));
}

// lendsTitle says where a node's lending comes from: its agent's last report and bounds
// (docs/policy.md, "Revocable capacity").
function lendsTitle(n) {
  const r = n.status.revocable;
  if (!r) return 'the node\'s agent reports no revocable capacity';
  return `lends at most ${Math.round(100 * r.maxFraction)}% of the node above a ${Math.round(100 * r.margin)}% margin of what its owners reserve and do not use; reported ${age(r.time)} ago`;
}

function row(n, usage, measured, problem, rights, open) {
  const m = n.metadata;
  const alloc = n.spec.allocatable || n.spec.capacity || {};
  const u = usage || {};
  const draining = (m.annotations || {})['berth.io/drain'] !== undefined;
  const path = `/v1/nodes/${encodeURIComponent(m.name)}`;
  const toggle = rights.need(h('button', { type: 'button', class: 'toggle' }, n.spec.disabled ? 'Enable' : 'Disable'), 'write', 'node', '');
  toggle.addEventListener('click', async () => {
    toggle.disabled = true;
    try {
      await call('PATCH', path, { spec: { disabled: !n.spec.disabled } });
    } catch (err) { node404(problem, err); } finally { toggle.disabled = false; }
  });
  const drain = rights.need(h('button', { type: 'button', class: 'drain', disabled: draining }, draining ? 'Draining' : 'Drain'), 'write', 'node', '');
  drain.addEventListener('click', async () => {
    if (!confirm(`Drain ${m.name}: disable it and move its instances off, one at a time?`)) return;
    drain.disabled = true;
    try { await call('POST', path + '/drain'); } catch (err) { node404(problem, err); drain.disabled = false; }
  });
  const expand = h('button', { type: 'button', class: 'expand', title: 'CPU and memory graphs', 'aria-expanded': String(open.has(m.name)) },
    open.has(m.name) ? '▾' : '▸');
  expand.addEventListener('click', () => open.toggle(m.name));
  const flags = [n.spec.disabled ? h('span', { class: 'badge warn' }, 'disabled') : '', draining ? h('span', { class: 'badge warn' }, 'draining') : ''];
  const mm = measured.get(m.name);
  return h('tr', { dataset: { key: m.name } },
    h('td', {}, expand, ' ', m.name),
    h('td', {}, badge(n.status.phase), ' ', flags),
    h('td', {}, n.spec.ip || ''),
    h('td', { class: 'cpu', style: 'white-space: nowrap' }, cpuCell(alloc, u, mm)),
    h('td', { class: 'mem', style: 'white-space: nowrap' }, memCell(alloc, u, mm)),
    h('td', {}, String(u.taskGroups ?? '')),
    h('td', {}, gpus(n), u.gpusInUse ? ` (${u.gpusInUse} in use)` : ''),
    h('td', {}, chips(m.labels), chips((n.spec.attributes || {}).text)),
    h('td', {}, (n.spec.taints || []).map((t) => h('span', { class: 'chips' }, h('span', {}, `${t.key}=${t.value}:${t.effect}`)))),
    h('td', { title: n.status.lastHeartbeat }, age(n.status.lastHeartbeat)),
    h('td', { class: 'lends', title: lendsTitle(n) }, lendsText(nodeLends(n, u))),
    h('td', {}, toggle, ' ', drain));
}

const dashed = 'stroke-dasharray: 2 2; stroke: var(--muted)';

// drawNode draws a node's graphs from its series and its last sample.
function drawNode(box, name, s, cur) {
  const alloc = cur.allocatable || {};
  const res = cur.reserved || {};
  const host = cur.host || {};
  const cpuTop = Math.max(0.1, alloc.cpu || 0, ...s.cpu.host.map(([, v]) => v)) * 1.1;
  const memTotal = host.memoryTotalBytes || 0;
  const memTop = Math.max(1, memTotal, ...s.mem.host.map(([, v]) => v)) * 1.05;
  const inst = cur.instances || {};
  box.replaceChildren(
    graph(`node-cpu-${name}`, 'CPU (host; instances dashed)', [{ points: s.cpu.host, cls: 'line' }, { points: s.cpu.instances, cls: 'line inst', style: dashed }],
      cpuTop, (v) => `${num(v)} of ${num(alloc.cpu || 0)} cores`,
      [{ value: alloc.cpu, cls: 'limit', title: 'allocatable' }, { value: res.cpu, cls: 'limit', style: 'stroke: var(--accent)', title: 'reserved' }]),
    graph(`node-mem-${name}`, 'Memory (host; instances dashed)', [{ points: s.mem.host, cls: 'line' }, { points: s.mem.instances, cls: 'line inst', style: dashed }],
      memTop, (v) => `${bytes(v)} of ${bytes(memTotal)}`,
      [{ value: (alloc.memoryMB || 0) * 1048576, cls: 'limit', title: 'allocatable' },
        { value: (res.memoryMB || 0) * 1048576, cls: 'limit', style: 'stroke: var(--accent)', title: 'reserved' }]),
    h('div', { class: 'muted node-instances' },
      `${inst.count || 0} instances: ${num(inst.cpuCores || 0)} cores, ${bytes(inst.memoryBytes || 0)} measured` +
      `${inst.unmeasured ? ` (${inst.unmeasured} tasks not measurable)` : ''}; ${num(res.cpu || 0)} cores, ${mib(res.memoryMB || 0)} reserved` +
      `${res.overheadMemoryMB ? ` (of which ${num(res.overheadCPU || 0)} cores and ${mib(res.overheadMemoryMB)} are the executors' overhead)` : ''}`,
      host.error ? h('div', { class: 'error' }, host.error) : ''));
}

// pollNode samples one node's usage into its graphs while its row is open (signal) and
// the page is in view; each sample also refreshes the row's numbers (onSample).
async function pollNode(name, box, signal, onSample) {
  const series = {};
  while (!signal.aborted) {
    if (document.visibilityState === 'visible') {
      try {
        const cur = await get(`/v1/nodes/${encodeURIComponent(name)}/usage`, { signal });
        addNodeSample(series, cur);
        drawNode(box, name, series, cur);
        onSample(cur);
      } catch (err) {
        if (signal.aborted) return;
        box.replaceChildren(errorBox(err));
      }
    }
    await sleep(graphPollMs, signal);
  }
}

// pollMeasured reads the measured usage of the listed nodes every listPollMs, a few at a
// time, while the page is in view; a node whose agent cannot answer shows none.
async function pollMeasured(names, measured, onSample, signal) {
  while (!signal.aborted) {
    if (document.visibilityState === 'visible') {
      const queue = [...names()];
      const worker = async () => {
        while (queue.length && !signal.aborted) {
          const name = queue.shift();
          try {
            onSample(name, await get(`/v1/nodes/${encodeURIComponent(name)}/usage`, { signal }));
          } catch (err) {
            if (signal.aborted) return;
            measured.delete(name);
          }
        }
      };
      await Promise.all(Array.from({ length: listParallel }, worker));
    }
    await sleep(listPollMs, signal);
  }
}

export async function nodesPage({ main, params, signal, rights }) {
  const q = params.get('q') || '';
  const cont = params.get('continue') || '';
  const qInput = h('input', { id: 'q', type: 'search', value: q, placeholder: 'name contains',
    onchange: () => { location.hash = withParams(params, { q: qInput.value.trim(), continue: '' }); } });
  const count = h('span', { class: 'muted', id: 'count' });
  const body = h('tbody', { id: 'rows' });
  const pager = h('div', { class: 'pager' });
  const problem = h('div');
  const headers = ['Name', 'Phase', 'IP', 'CPU used · reserved / allocatable', 'Memory used · reserved / allocatable', 'Task groups', 'GPUs', 'Labels, attributes', 'Taints', 'Heartbeat', 'Lends to revocable', ''];
  main.append(h('h1', {}, 'Nodes'), h('div', { class: 'toolbar' }, h('label', {}, 'Name', qInput), count), problem,
    h('table', { id: 'nodes' }, h('thead', {}, h('tr', {}, headers.map((x) => h('th', {}, x)))), body),
    pager);

  const measured = new Map(); // node name -> its last usage sample
  const nodes = new Map(); // node name -> the node object shown
  let usage = {};
  const rowOf = (name) => body.querySelector(`tr[data-key="${CSS.escape(name)}"]`);
  // Open rows: each has a detail row after it whose graphs poll until it closes.
  const polls = new Map(); // node name -> AbortController
  const open = {
    has: (name) => polls.has(name),
    toggle: (name) => { if (polls.has(name)) close(name); else openRow(name); },
  };
  const refresh = (name) => {
    const tr = rowOf(name);
    const n = nodes.get(name);
    if (!tr || !n) return;
    const alloc = n.spec.allocatable || n.spec.capacity || {};
    const mm = measured.get(name);
    tr.querySelector('td.cpu').replaceChildren(...cpuCell(alloc, usage[name] || {}, mm));
    tr.querySelector('td.mem').replaceChildren(...memCell(alloc, usage[name] || {}, mm));
  };
  const onSample = (name, cur) => {
    measured.set(name, cur);
    if (cur.reserved) usage[name] = { ...(usage[name] || {}), cpu: cur.reserved.cpu, memoryMB: cur.reserved.memoryMB, overheadCPU: cur.reserved.overheadCPU, overheadMemoryMB: cur.reserved.overheadMemoryMB };
    refresh(name);
  };
  function openRow(name) {
    const tr = rowOf(name);
    if (!tr) return;
    const box = h('div', { class: 'usage', id: `node-usage-${name}` }, h('p', { class: 'muted' }, 'Measuring…'));
    tr.after(h('tr', { class: 'detail', dataset: { detail: name } }, h('td', { colspan: headers.length }, box)));
    const ctl = new AbortController();
    signal.addEventListener('abort', () => ctl.abort(), { once: true });
    polls.set(name, ctl);
    const b = tr.querySelector('button.expand');
    b.textContent = '▾';
    b.setAttribute('aria-expanded', 'true');
    pollNode(name, box, ctl.signal, (cur) => onSample(name, cur));
  }
  function close(name) {
    const ctl = polls.get(name);
    if (ctl) ctl.abort();
    polls.delete(name);
    const d = body.querySelector(`tr.detail[data-detail="${CSS.escape(name)}"]`);
    if (d) d.remove();
    const b = (rowOf(name) || document.createElement('tr')).querySelector('button.expand');
    if (b) { b.textContent = '▸'; b.setAttribute('aria-expanded', 'false'); }
  }

  let polling = false;
  await keepWatching(signal, async () => {
    const list = await get('/v1/nodes' + query({ limit: pageSize, continue: cont, q }), { signal });
    usage = list.usage || {};
    problem.replaceChildren();
    const reopen = [...polls.keys()];
    for (const name of reopen) close(name);
    nodes.clear();
    for (const n of list.items) nodes.set(n.metadata.name, n);
    body.replaceChildren(...list.items.map((n) => row(n, usage[n.metadata.name], measured, problem, rights, open)));
    for (const name of reopen) if (nodes.has(name)) openRow(name);
    if (!polling) { // once there are rows to measure; an open row's graphs measure its node
      polling = true;
      pollMeasured(() => [...nodes.keys()].filter((n) => !polls.has(n)), measured, onSample, signal);
    }
    count.textContent = list.total != null ? `${list.items.length} of ${list.total}` : `${list.items.length} shown`;
    pager.replaceChildren(cont ? link(withParams(params, { continue: '' }), '« First page') : '',
      list.continue ? link(withParams(params, { continue: list.continue }), 'Next page »') : '');
    await watch('/v1/nodes' + query({ watch: 'true', resourceVersion: list.resourceVersion }), (ev) => {
      if (!ev.object) return;
      const name = ev.object.metadata.name;
      const tr = rowOf(name);
      if (!tr) return;
      if (ev.type === 'DELETED') { tr.classList.add('gone'); return; }
      nodes.set(name, ev.object);
      const next = row(ev.object, usage[name], measured, problem, rights, open);
      next.classList.add('changed');
      tr.replaceWith(next); // an open row's detail row stays after it
    }, signal);
  }, (err) => problem.replaceChildren(errorBox(err)));
}
