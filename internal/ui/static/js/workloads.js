// Workloads: every kind (the landing page) or one, in one namespace or all, filtered by
// name and phase. Each kind's list is read a page at a time and filtered on the server,
// then kept current by its watch (kindrows.js): the browser never holds more than a page
// of each kind, whatever the size of the cluster.
import { get, workloadKinds } from './api.js';
import { h, link, errorBox } from './dom.js';
import { withParams } from './live.js';
import { followKind, instances, pageSize } from './kindrows.js';

export { instances, pageSize };

const phases = ['', 'Staging', 'Deploying', 'Running', 'Operating', 'Abnormal', 'Finish', 'Failed', 'Lost', 'Updating', 'Paused'];

// namespacePicker is a select of the namespaces the token may read in (GET
// /v1/namespaces), "all namespaces" first; the namespace in the URL is kept even when the
// list does not name it (nothing is in it yet).
// The list is read once the page has painted (fill), not before: the first paint waits
// for the workloads only.
export function namespacePicker(ns, go) {
  const select = h('select', { id: 'ns', onchange: () => go({ ns: select.value }) },
    h('option', { value: '' }, 'all namespaces'), ns ? h('option', { value: ns, selected: true }, ns) : '');
  const fill = (names) => names.then((list) => {
    for (const name of list) {
      if (name !== ns) select.append(h('option', { value: name }, name));
    }
    const options = [...select.options].slice(1).sort((a, b) => a.value.localeCompare(b.value));
    select.append(...options);
    select.value = ns;
  }).catch(() => { /* the picker keeps what it has; the lists say what is wrong */ });
  return { select, fill };
}

export async function workloadsPage({ main, params, signal }) {
  const one = workloadKinds[params.get('kind')] ? params.get('kind') : '';
  const kinds = one ? [one] : Object.keys(workloadKinds);
  const ns = params.get('ns') || '';
  const q = params.get('q') || '';
  const phase = params.get('phase') || '';
  const cont = one ? params.get('continue') || '' : '';
  const go = (changes) => { location.hash = withParams(params, { continue: '', ...changes }); };
  let namesRead = null;
  const names = () => { namesRead ??= get('/v1/namespaces', { signal }).then((l) => l.items || []); return namesRead; };
  const picker = namespacePicker(ns, go);

  const kindSelect = h('select', { id: 'kind', onchange: () => go({ kind: kindSelect.value }) },
    h('option', { value: '' }, 'all kinds'), Object.keys(workloadKinds).map((p) => h('option', { value: p, selected: p === one }, p)));
  const qInput = h('input', { id: 'q', type: 'search', value: q, placeholder: 'name contains', onchange: () => go({ q: qInput.value.trim() }) });
  const phaseSelect = h('select', { id: 'phase', onchange: () => go({ phase: phaseSelect.value }) },
    phases.map((p) => h('option', { value: p, selected: p === phase }, p || 'any phase')));
  const count = h('span', { class: 'muted', id: 'count' });
  const fresh = h('div', { class: 'notice', hidden: true, id: 'fresh' });
  const notShown = h('div', { class: 'muted', id: 'not-shown' });
  const body = h('tbody', { id: 'rows' });
  const pager = h('div', { class: 'pager' });
  const problem = h('div');
  const headers = ['Name', one ? '' : 'Kind', 'Namespace', 'Phase', 'Instances', 'Message', 'Age'].filter(Boolean);
  main.append(h('h1', {}, 'Workloads'),
    h('div', { class: 'toolbar' }, h('label', {}, 'Kind', kindSelect), h('label', {}, 'Namespace', picker.select),
      h('label', {}, 'Name', qInput), h('label', {}, 'Phase', phaseSelect), count),
    fresh, problem, notShown,
    h('table', { id: 'workloads' }, h('thead', {}, h('tr', {}, headers.map((x) => h('th', {}, x)))), body),
    pager);

  const lists = new Map(); // plural → its last list, or null while unread
  const refused = new Map(); // plural → the server's refusal
  let added = 0;
  const show = () => {
    const read = [...lists.values()].filter(Boolean);
    const shown = body.querySelectorAll('tr[data-kind]').length;
    body.querySelector('tr:not([data-kind])')?.remove();
    if (shown === 0 && lists.size + refused.size === kinds.length && read.length) {
      body.append(h('tr', {}, h('td', { colspan: headers.length, class: 'muted' }, 'No workloads here.')));
    }
    const total = read.reduce((n, l) => n + (l.total ?? l.items.length), 0);
    count.textContent = read.every((l) => l.total != null) ? `${shown} of ${total}` : `${shown} shown`;
    notShown.replaceChildren(...[...refused].map(([p, err]) => h('div', {}, `${p} not shown: ${err.message}`)));
    if (one) {
      const list = lists.get(one);
      pager.replaceChildren(cont ? link(withParams(params, { continue: '' }), '« First page') : '',
        list && list.continue ? link(withParams(params, { continue: list.continue }), 'Next page »') : '');
    } else {
      pager.replaceChildren(...[...lists].filter(([, l]) => l && l.continue).map(([p, l]) =>
        link(withParams(params, { kind: p }), `all ${l.total ?? 'the'} ${p} »`)));
    }
  };
  let painted = false;
  const paint = () => {
    if (painted || lists.size + refused.size < kinds.length) return;
    painted = true;
    performance.mark('berth:workloads-painted');
    main.dataset.painted = 'true';
    picker.fill(names());
    if (!ns && refused.size === kinds.length) pickNamespace();
  };
  // A token that may list nothing in every namespace lands in the first namespace it
  // may read in.
  const pickNamespace = () => names().then((list) => {
    if (list.length && !signal.aborted) location.hash = withParams(params, { ns: list[0], continue: '' });
  }).catch(() => {});
  const view = {
    ns, q, phase, cont, body, showKind: !one, signal,
    // list: the kind's list just read; null: a new workload was put on its page.
    listed: (plural, list) => {
      const had = lists.get(plural);
      if (list) lists.set(plural, list);
      else if (had && had.total != null) had.total++;
      refused.delete(plural);
      problem.replaceChildren();
      show();
      paint();
    },
    refused: (plural, err) => {
      lists.delete(plural);
      refused.set(plural, err);
      show();
      paint();
    },
    more: () => {
      added++;
      fresh.hidden = false;
      fresh.replaceChildren(`${added} more since this page was read: `, h('a', { href: '#', onclick: (e) => { e.preventDefault(); location.reload(); } }, 'reload'));
    },
    onError: (err) => problem.replaceChildren(errorBox(err)),
  };
  await Promise.all(kinds.map((p) => followKind(view, p)));
}
