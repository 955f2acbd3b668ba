// Events: the cluster's event records (or a namespace's), newest first, a page at a time
// going back ("more"), new ones on top as they are recorded (the events watch), filtered
// by namespace (on the server) and by type (here: the API does not filter by type). The
// page keeps at most maxRows rows.
import { APIError, get, watch, query } from './api.js';
import { h, age, link, errorBox } from './dom.js';
import { keepWatching, withParams } from './live.js';
import { namespacePicker } from './workloads.js';

const pageSize = 100;
export const maxRows = 2000;
const workloadPlural = { application: 'applications', process: 'processes', deployment: 'deployments', daemonset: 'daemonsets' };

// identity is what makes a record one: a repeat of it updates it (count, last seen).
export const identity = (e) => JSON.stringify([e.kind || '', e.namespace || '', e.name || '', e.type, e.reason, e.message, e.taskgroup || '', e.node || '']);

function objectCell(e) {
  const what = `${e.kind || ''} ${e.namespace ? e.namespace + '/' : ''}${e.name || ''}`.trim();
  const plural = workloadPlural[e.kind];
  const at = () => `${encodeURIComponent(e.namespace)}/${encodeURIComponent(e.name)}`;
  let href = '';
  if (e.namespace && e.name && plural) href = `#/w/${plural}/${at()}`;
  else if (e.namespace && e.name && e.kind === 'taskgroup') href = `#/taskgroup/${at()}`;
  return h('td', {}, href ? link(href, what) : what,
    e.taskgroup ? h('div', { class: 'muted' }, link(`#/taskgroup/${encodeURIComponent(e.namespace)}/${encodeURIComponent(e.taskgroup)}`, e.taskgroup)) : '');
}

function eventRow(e) {
  const seen = e.lastTime || e.time;
  return h('tr', { dataset: { id: identity(e), count: String(e.count || 1), type: e.type } },
    h('td', { title: seen }, `${age(seen)} ago`),
    h('td', {}, h('span', { class: `badge ${e.type === 'Warning' ? 'bad' : 'ok'}` }, e.type)),
    h('td', {}, e.reason), objectCell(e), h('td', { class: 'message' }, e.message),
    h('td', { class: 'count' }, String(e.count || 1)), h('td', {}, e.node || ''));
}

export async function eventsPage({ main, params, signal }) {
  delete main.dataset.painted; // set again once this page's first list is on screen
  const ns = params.get('ns') || '';
  const type = ['Warning', 'Normal'].includes(params.get('type')) ? params.get('type') : '';
  const go = (changes) => { location.hash = withParams(params, changes); };
  const picker = namespacePicker(ns, go);
  const typeSelect = h('select', { id: 'type', onchange: () => go({ type: typeSelect.value }) },
    ['', 'Warning', 'Normal'].map((t) => h('option', { value: t, selected: t === type }, t || 'any type')));
  const body = h('tbody', { id: 'events' });
  const problem = h('div');
  const note = h('p', { class: 'muted', id: 'events-note' });
  const more = h('button', { type: 'button', id: 'more', hidden: true }, 'More');
  main.append(h('h1', {}, 'Events'),
    h('div', { class: 'toolbar' }, h('label', {}, 'Namespace', picker.select), h('label', {}, 'Type', typeSelect)),
    problem, h('table', {}, h('thead', {}, h('tr', {}, ['Last seen', 'Type', 'Reason', 'Object', 'Message', 'Count', 'Node'].map((x) => h('th', {}, x)))), body),
    h('div', { class: 'pager' }, more), note);

  const wanted = (e) => !type || e.type === type;
  let cont = '';
  let dropped = false;
  const showPager = () => {
    const full = body.querySelectorAll('tr[data-id]').length >= maxRows;
    more.hidden = !cont || full || dropped;
    note.textContent = dropped || (cont && full) ? `This page keeps the newest ${maxRows.toLocaleString('en')} events; older ones are not shown.` : '';
    if (!body.querySelector('tr[data-id]')) body.replaceChildren(h('tr', {}, h('td', { colspan: 7, class: 'muted' }, 'No events here.')));
  };
  const find = (e) => body.querySelector(`tr[data-id="${CSS.escape(identity(e))}"]`);
  // top puts a record seen now on top: a repeat replaces its older row.
  const top = (e) => {
    if (!wanted(e)) return;
    const had = find(e);
    if (had && Number(had.dataset.count) >= (e.count || 1)) return; // already shown (the list and the watch overlap)
    had?.remove();
    body.querySelector('tr:not([data-id])')?.remove();
    body.prepend(eventRow(e));
    const rows = body.querySelectorAll('tr[data-id]');
    for (let i = maxRows; i < rows.length; i++) { rows[i].remove(); dropped = true; }
    showPager();
  };
  const older = (list) => {
    for (const e of list.items) {
      if (wanted(e) && !find(e)) body.append(eventRow(e));
    }
    cont = list.continue || '';
    const rows = body.querySelectorAll('tr[data-id]');
    for (let i = maxRows; i < rows.length; i++) rows[i].remove();
    showPager();
  };
  const listURL = (c) => '/v1/events' + query({ namespace: ns, order: 'newest', limit: pageSize, continue: c });
  more.addEventListener('click', async () => {
    more.disabled = true;
    try {
      older(await get(listURL(cont), { signal }));
    } catch (err) {
      if (!signal.aborted) problem.replaceChildren(errorBox(err));
    } finally {
      more.disabled = false;
    }
  });

  let painted = false;
  let moved = false;
  const onError = (err) => {
    problem.replaceChildren(errorBox(err));
    if (ns || moved || !(err instanceof APIError) || err.status !== 403) return;
    moved = true; // a token limited to some namespaces lands in the first it may read in
    get('/v1/namespaces', { signal }).then((l) => { if ((l.items || []).length && !signal.aborted) go({ ns: l.items[0] }); }).catch(() => {});
  };
  // The list first (the page paints with it), then the watch from the list's revision:
  // nothing recorded in between is missed, and a repeat of a shown record moves it up.
  await keepWatching(signal, async () => {
    const list = await get(listURL(''), { signal });
    body.replaceChildren();
    dropped = false;
    older(list);
    problem.replaceChildren();
    if (!painted) {
      painted = true;
      performance.mark('berth:page-painted');
      main.dataset.painted = 'events';
      picker.fill(get('/v1/namespaces', { signal }).then((l) => l.items || []));
    }
    await watch('/v1/events' + query({ namespace: ns, watch: 'true', resourceVersion: list.resourceVersion }), (ev) => {
      if (ev.type !== 'ERROR') top(ev.object || ev);
    }, signal);
  }, onError);
}
