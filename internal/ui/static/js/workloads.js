// Workloads: one page of one kind's list, read and filtered on the server (limit,
// continue, q, phase), then kept current by the kind's watch. The browser never holds
// more than a page, whatever the size of the cluster.
import { get, watch, objectPath, query, workloadKinds } from './api.js';
import { h, badge, age, link, errorBox } from './dom.js';
import { keepWatching, withParams } from './live.js';

export const pageSize = 50;

const phases = ['', 'Staging', 'Deploying', 'Running', 'Operating', 'Abnormal', 'Finish', 'Failed', 'Lost', 'Updating', 'Paused'];

// instances is "running/wanted" of a workload of any kind.
export function instances(obj) {
  const st = obj.status || {};
  switch (obj.kind) {
    case 'deployment': return `${st.available || 0}/${st.instances ?? obj.spec.instance ?? 0}`;
    case 'daemonset': return `${st.running || 0}/${st.desired || 0}`;
    default: return `${st.running || 0}/${obj.spec.instance ?? 0}`;
  }
}

function row(plural, obj) {
  const m = obj.metadata;
  const st = obj.status || {};
  return h('tr', { dataset: { key: `${m.namespace}/${m.name}` } },
    h('td', {}, link(`#/w/${plural}/${encodeURIComponent(m.namespace)}/${encodeURIComponent(m.name)}`, m.name)),
    h('td', {}, m.namespace),
    h('td', {}, badge(st.phase)),
    h('td', { class: 'instances' }, instances(obj)),
    h('td', {}, st.message || ''),
    h('td', { title: m.creationTimestamp }, age(m.creationTimestamp)));
}

function matches(obj, q, phase) {
  if (q && !obj.metadata.name.toLowerCase().includes(q.toLowerCase())) return false;
  return !phase || ((obj.status || {}).phase || '').toLowerCase() === phase.toLowerCase();
}

export async function workloadsPage({ main, params, signal }) {
  const plural = workloadKinds[params.get('kind')] ? params.get('kind') : 'applications';
  const ns = params.get('ns') || '';
  const q = params.get('q') || '';
  const phase = params.get('phase') || '';
  const cont = params.get('continue') || '';
  const go = (changes) => { location.hash = withParams(params, { continue: '', ...changes }); };

  const kindSelect = h('select', { id: 'kind', onchange: () => go({ kind: kindSelect.value }) },
    Object.keys(workloadKinds).map((p) => h('option', { value: p, selected: p === plural }, p)));
  const nsInput = h('input', { id: 'ns', value: ns, placeholder: 'all namespaces', onchange: () => go({ ns: nsInput.value.trim() }) });
  const qInput = h('input', { id: 'q', type: 'search', value: q, placeholder: 'name contains', onchange: () => go({ q: qInput.value.trim() }) });
  const phaseSelect = h('select', { id: 'phase', onchange: () => go({ phase: phaseSelect.value }) },
    phases.map((p) => h('option', { value: p, selected: p === phase }, p || 'any phase')));
  const count = h('span', { class: 'muted', id: 'count' });
  const fresh = h('div', { class: 'notice', hidden: true, id: 'fresh' });
  const body = h('tbody', { id: 'rows' });
  const pager = h('div', { class: 'pager' });
  const problem = h('div');
  main.append(h('h1', {}, 'Workloads'),
    h('div', { class: 'toolbar' }, h('label', {}, 'Kind', kindSelect), h('label', {}, 'Namespace', nsInput),
      h('label', {}, 'Name', qInput), h('label', {}, 'Phase', phaseSelect), count),
    fresh, problem,
    h('table', { id: 'workloads' }, h('thead', {}, h('tr', {}, ['Name', 'Namespace', 'Phase', 'Instances', 'Message', 'Age'].map((x) => h('th', {}, x)))), body),
    pager);

  let painted = false;
  await keepWatching(signal, async () => {
    const list = await get(objectPath(plural, ns) + query({ limit: pageSize, continue: cont, q, phase }), { signal });
    problem.replaceChildren();
    body.replaceChildren(...list.items.map((o) => row(plural, o)));
    if (list.items.length === 0) body.append(h('tr', {}, h('td', { colspan: 6, class: 'muted' }, 'No workloads here.')));
    count.textContent = list.total != null ? `${list.items.length} of ${list.total}` : `${list.items.length} shown`;
    pager.replaceChildren(
      cont ? link(withParams(params, { continue: '' }), '« First page') : '',
      list.continue ? link(withParams(params, { continue: list.continue }), 'Next page »') : '');
    if (!painted) {
      painted = true;
      performance.mark('berth:workloads-painted');
      main.dataset.painted = 'true';
    }
    let added = 0;
    await watch(objectPath(plural, ns) + query({ watch: 'true', resourceVersion: list.resourceVersion }), (ev) => {
      if (ev.type === 'ERROR' || !ev.object) return;
      const m = ev.object.metadata;
      const tr = body.querySelector(`tr[data-key="${CSS.escape(m.namespace + '/' + m.name)}"]`);
      if (tr && ev.type === 'DELETED') {
        tr.classList.add('gone');
      } else if (tr) {
        const next = row(plural, ev.object);
        next.classList.add('changed');
        tr.replaceWith(next);
      } else if (ev.type !== 'DELETED' && matches(ev.object, q, phase)) {
        const key = `${m.namespace}/${m.name}`;
        const rows = [...body.querySelectorAll('tr[data-key]')];
        const after = rows.find((r) => r.dataset.key > key);
        if (!cont && (after || !list.continue)) {
          // On the first page, a new workload takes its place in name order.
          body.querySelector('tr:not([data-key])')?.remove();
          const next = row(plural, ev.object);
          next.classList.add('changed');
          body.insertBefore(next, after || null);
        } else {
          added++;
          fresh.hidden = false;
          fresh.replaceChildren(`${added} more since this page was read: `, h('a', { href: '#', onclick: (e) => { e.preventDefault(); location.reload(); } }, 'reload'));
        }
      }
    }, signal);
  }, (err) => problem.replaceChildren(errorBox(err)));
}

