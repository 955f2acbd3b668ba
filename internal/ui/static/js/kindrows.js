// The rows of one kind of workload in the workloads table: a page of the kind's list,
// read and filtered on the server, then kept current by the kind's watch. Several kinds
// share one table (the landing page shows them all), each row placed in name order.
import { APIError, get, watch, objectPath, query, workloadKinds } from './api.js';
import { h, age, link } from './dom.js';
import { keepWatching, sleep } from './live.js';
import { phaseBadge, note } from './status.js';

export const pageSize = 50;

// A kind the token may not list is asked again this often: a policy may grant it later.
const refusedRetryMs = 30000;

// instances is "running/wanted" of a workload of any kind.
export function instances(obj) {
  const st = obj.status || {};
  switch (obj.kind) {
    case 'deployment': return `${st.available || 0}/${st.instances ?? obj.spec.instance ?? 0}`;
    case 'daemonset': return `${st.running || 0}/${st.desired || 0}`;
    default: return `${st.running || 0}/${obj.spec.instance ?? 0}`;
  }
}

// sortKey orders rows by namespace, name, then kind.
const sortKey = (plural, m) => `${m.namespace}\u0000${m.name}\u0000${plural}`;

export function row(plural, obj, showKind) {
  const m = obj.metadata;
  return h('tr', { dataset: { key: `${m.namespace}/${m.name}`, kind: plural, sort: sortKey(plural, m) } },
    h('td', {}, link(`#/w/${plural}/${encodeURIComponent(m.namespace)}/${encodeURIComponent(m.name)}`, m.name)),
    showKind ? h('td', { class: 'kind' }, workloadKinds[plural]) : '',
    h('td', {}, m.namespace),
    h('td', {}, phaseBadge(obj)),
    h('td', { class: 'instances' }, instances(obj)),
    h('td', { class: 'note' }, note(obj)),
    h('td', { title: m.creationTimestamp }, age(m.creationTimestamp)));
}

function matches(obj, q, phase) {
  if (q && !obj.metadata.name.toLowerCase().includes(q.toLowerCase())) return false;
  return !phase || ((obj.status || {}).phase || '').toLowerCase() === phase.toLowerCase();
}

// place puts tr among body's rows in sort order.
function place(body, tr) {
  const after = [...body.querySelectorAll('tr[data-sort]')].find((r) => r.dataset.sort > tr.dataset.sort);
  body.insertBefore(tr, after || null);
}

// followKind lists plural into view.body and follows its watch until view.signal ends.
// view: { ns, q, phase, cont, body, showKind, signal, listed(plural, list), refused(plural,
// err), more(plural), onError(err) }. listed is called after each list; refused when the
// token may not list the kind (asked again every 30 s); more when a new workload falls
// past the page.
export function followKind(view, plural) {
  const { ns, q, phase, cont, body, showKind, signal } = view;
  const find = (m) => body.querySelector(`tr[data-kind="${plural}"][data-key="${CSS.escape(m.namespace + '/' + m.name)}"]`);
  return keepWatching(signal, async () => {
    let list;
    try {
      list = await get(objectPath(plural, ns) + query({ limit: pageSize, continue: cont, q, phase }), { signal });
    } catch (err) {
      if (!(err instanceof APIError) || err.status !== 403) throw err;
      for (const tr of body.querySelectorAll(`tr[data-kind="${plural}"]`)) tr.remove();
      view.refused(plural, err);
      await sleep(refusedRetryMs, signal);
      return;
    }
    for (const tr of body.querySelectorAll(`tr[data-kind="${plural}"]`)) tr.remove();
    for (const o of list.items) place(body, row(plural, o, showKind));
    view.listed(plural, list);
    await watch(objectPath(plural, ns) + query({ watch: 'true', resourceVersion: list.resourceVersion }), (ev) => {
      if (ev.type === 'ERROR' || !ev.object) return;
      const m = ev.object.metadata;
      const tr = find(m);
      if (tr && ev.type === 'DELETED') {
        tr.classList.add('gone');
      } else if (tr) {
        const next = row(plural, ev.object, showKind);
        next.classList.add('changed');
        tr.replaceWith(next);
      } else if (ev.type !== 'DELETED' && matches(ev.object, q, phase)) {
        const next = row(plural, ev.object, showKind);
        const later = [...body.querySelectorAll(`tr[data-kind="${plural}"]`)].some((r) => r.dataset.sort > next.dataset.sort);
        if (!cont && (later || !list.continue)) {
          // On the first page, a new workload takes its place in name order.
          next.classList.add('changed');
          place(body, next);
          view.listed(plural, null);
        } else {
          view.more(plural);
        }
      }
    }, signal);
  }, view.onError);
}
