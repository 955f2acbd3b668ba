// A kind's list a page at a time in a table: the first page, then each next one when
// "more" is pressed, kept current by the kind's watch from the first page's revision.
// Rows stay in the list's order (namespace, then name, as the server gives them); a new
// object takes its place when it falls within the pages read, and one past them is kept
// aside until "more" reaches its place (the pages after the first are read at the first
// page's revision, so what changed since comes from the watch).
import { get, watch, objectPath, query } from './api.js';
import { h } from './dom.js';
import { keepWatching } from './live.js';

export const pageSize = 50;

// The list's order: etcd's, by namespace then name, with the key's own separator.
const keyOf = (o) => `${o.metadata.namespace}/${o.metadata.name}`;

// followPages lists plural (in ns, or every namespace) into body and follows it until
// signal aborts. opts: params (more query parameters, sent on the list and the watch),
// row(obj) → tr, columns (for the empty row), more (the "more" button, shown while pages
// remain), listed(list) after each first page, onError(err).
export function followPages({ plural, ns, params = {}, body, row, columns, more, listed, onError, signal }) {
  let cont = '';
  let last = ''; // the key of the last row of the pages read
  const aside = new Map(); // key → object past the pages read, changed since they were (null: deleted)
  const rows = new Map(); // key → tr

  const within = (key) => !cont || key <= last;
  const put = (obj) => {
    const key = keyOf(obj);
    const next = row(obj);
    next.dataset.key = key;
    const tr = rows.get(key);
    rows.set(key, next);
    if (tr) { tr.replaceWith(next); return; }
    body.querySelector('tr:not([data-key])')?.remove();
    const after = [...rows.keys()].filter((k) => k > key && rows.get(k).isConnected).sort()[0];
    body.insertBefore(next, after ? rows.get(after) : null);
  };
  const empty = () => {
    if (!rows.size) body.replaceChildren(h('tr', {}, h('td', { colspan: columns, class: 'muted' }, 'None here.')));
  };
  const remove = (key) => {
    rows.get(key)?.remove();
    rows.delete(key);
    empty();
  };
  const read = (list) => {
    for (const o of list.items) {
      if (!aside.has(keyOf(o))) put(o);
    }
    cont = list.continue || '';
    if (list.items.length) last = keyOf(list.items[list.items.length - 1]);
    for (const [key, o] of aside) {
      if (!within(key)) continue;
      aside.delete(key);
      if (o) put(o);
    }
    empty();
    more.hidden = !cont;
  };
  more.addEventListener('click', async () => {
    more.disabled = true;
    try {
      read(await get(objectPath(plural, ns) + query({ ...params, limit: pageSize, continue: cont }), { signal }));
    } catch (err) {
      if (!signal.aborted) onError(err);
    } finally {
      more.disabled = false;
    }
  });

  return keepWatching(signal, async () => {
    const list = await get(objectPath(plural, ns) + query({ ...params, limit: pageSize }), { signal });
    rows.clear();
    aside.clear();
    cont = '';
    last = '';
    body.replaceChildren();
    read(list);
    listed(list);
    await watch(objectPath(plural, ns) + query({ ...params, watch: 'true', resourceVersion: list.resourceVersion }), (ev) => {
      if (ev.type === 'ERROR' || !ev.object) return;
      const key = keyOf(ev.object);
      const deleted = ev.type === 'DELETED';
      if (rows.has(key) || within(key)) {
        if (deleted) remove(key);
        else put(ev.object);
      } else {
        aside.set(key, deleted ? null : ev.object);
      }
    }, signal);
  }, onError);
}
