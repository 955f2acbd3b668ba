// Nodes: a page of nodes with their capacity beside what their task groups hold (the
// scheduler's accounting, in the same answer), live through the nodes' watch; disable,
// enable and drain, as the token allows.
import { call, get, watch, query } from './api.js';
import { h, badge, age, chips, link, errorBox, mib, num } from './dom.js';
import { keepWatching, withParams } from './live.js';

const pageSize = 50;

function node404(problem, err) { problem.replaceChildren(errorBox(err)); }

function gpus(n) {
  const cards = (n.spec.gpus || []).length || ((n.spec.capacity || {}).extended || {})['nvidia.com/gpu'] || 0;
  return cards ? String(cards) : '';
}

function row(n, usage, problem, rights) {
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
  const flags = [n.spec.disabled ? h('span', { class: 'badge warn' }, 'disabled') : '', draining ? h('span', { class: 'badge warn' }, 'draining') : ''];
  return h('tr', { dataset: { key: m.name } },
    h('td', {}, m.name),
    h('td', {}, badge(n.status.phase), ' ', flags),
    h('td', {}, n.spec.ip || ''),
    h('td', {}, `${num(u.cpu || 0)} / ${num(alloc.cpu || 0)}`),
    h('td', {}, `${mib(u.memoryMB || 0)} / ${mib(alloc.memoryMB || 0)}`),
    h('td', {}, String(u.taskGroups ?? '')),
    h('td', {}, gpus(n), u.gpusInUse ? ` (${u.gpusInUse} in use)` : ''),
    h('td', {}, chips(m.labels), chips((n.spec.attributes || {}).text)),
    h('td', {}, (n.spec.taints || []).map((t) => h('span', { class: 'chips' }, h('span', {}, `${t.key}=${t.value}:${t.effect}`)))),
    h('td', { title: n.status.lastHeartbeat }, age(n.status.lastHeartbeat)),
    h('td', {}, toggle, ' ', drain));
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
  main.append(h('h1', {}, 'Nodes'), h('div', { class: 'toolbar' }, h('label', {}, 'Name', qInput), count), problem,
    h('table', { id: 'nodes' }, h('thead', {}, h('tr', {}, ['Name', 'Phase', 'IP', 'CPU used / allocatable', 'Memory', 'Task groups', 'GPUs', 'Labels, attributes', 'Taints', 'Heartbeat', ''].map((x) => h('th', {}, x)))), body),
    pager);
  await keepWatching(signal, async () => {
    const list = await get('/v1/nodes' + query({ limit: pageSize, continue: cont, q }), { signal });
    const usage = list.usage || {};
    problem.replaceChildren();
    body.replaceChildren(...list.items.map((n) => row(n, usage[n.metadata.name], problem, rights)));
    count.textContent = list.total != null ? `${list.items.length} of ${list.total}` : `${list.items.length} shown`;
    pager.replaceChildren(cont ? link(withParams(params, { continue: '' }), '« First page') : '',
      list.continue ? link(withParams(params, { continue: list.continue }), 'Next page »') : '');
    await watch('/v1/nodes' + query({ watch: 'true', resourceVersion: list.resourceVersion }), (ev) => {
      if (!ev.object) return;
      const name = ev.object.metadata.name;
      const tr = body.querySelector(`tr[data-key="${CSS.escape(name)}"]`);
      if (!tr) return;
      if (ev.type === 'DELETED') { tr.classList.add('gone'); return; }
      const next = row(ev.object, usage[name], problem, rights);
      next.classList.add('changed');
      tr.replaceWith(next);
    }, signal);
  }, (err) => problem.replaceChildren(errorBox(err)));
}
