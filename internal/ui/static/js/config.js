// Config: the configmaps and the secrets of a namespace (or of every namespace the token
// may list), a page at a time and live (pagedlist.js), and one configmap's keys and
// values (configuration: whoever may read it sees it). A secret shows its keys only: the
// page lists secrets with ?keysOnly=true, so no value ever reaches the browser.
import { APIError, get, watch, objectPath, query } from './api.js';
import { h, age, bytes, link, errorBox } from './dom.js';
import { keepWatching, withParams } from './live.js';
import { namespacePicker } from './workloads.js';
import { followPages } from './pagedlist.js';

// decoded is an item's base64 content as text, or null when it is not base64 or not
// UTF-8 text; size its size in bytes (decoded when it is base64).
export function decoded(content) {
  try {
    const raw = Uint8Array.from(atob(content || ''), (c) => c.charCodeAt(0));
    return { text: new TextDecoder('utf-8', { fatal: true }).decode(raw), size: raw.length };
  } catch {
    return { text: null, size: null };
  }
}

export function dataSize(content) {
  const d = decoded(content);
  return d.size ?? new TextEncoder().encode(content || '').length;
}

const remote = (d) => d.type && d.type !== 'file' && d.type !== 'env';

function keyChips(datas, withSize) {
  const keys = Object.keys(datas || {}).sort();
  if (!keys.length) return h('span', { class: 'muted' }, 'no keys');
  return h('span', { class: 'chips keys' }, keys.map((k) => h('span', { dataset: { key: k } },
    withSize && !remote(datas[k]) ? `${k} (${bytes(dataSize(datas[k].content))})` : k)));
}

const configmapHref = (ns, name) => `#/configmap/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`;

function configmapRow(cm) {
  const m = cm.metadata;
  return h('tr', {},
    h('td', {}, link(configmapHref(m.namespace, m.name), m.name)), h('td', {}, m.namespace),
    h('td', {}, keyChips(cm.datas, true)),
    h('td', { title: m.creationTimestamp || '' }, m.creationTimestamp ? `${age(m.creationTimestamp)} ago` : ''));
}

// secretRow is built from a secret listed with keysOnly: its keys (and a key's path), no value.
function secretRow(s) {
  const m = s.metadata;
  const keys = Object.entries(s.datas || {}).sort(([a], [b]) => a.localeCompare(b));
  return h('tr', {},
    h('td', {}, m.name), h('td', {}, m.namespace), h('td', {}, s.type || ''),
    h('td', {}, keys.length ? h('span', { class: 'chips keys' }, keys.map(([k, d]) => h('span', { dataset: { key: k } }, d.path ? `${k} → ${d.path}` : k)))
      : h('span', { class: 'muted' }, 'no keys')),
    h('td', { title: m.creationTimestamp || '' }, m.creationTimestamp ? `${age(m.creationTimestamp)} ago` : ''));
}

// configPage is the page of one of the two kinds; the other is a link away.
function configPage(which, { main, params, signal, rights }) {
  delete main.dataset.painted; // set again once this page's first list is on screen
  const ns = params.get('ns') || '';
  const go = (changes) => { location.hash = withParams(params, changes); };
  const picker = namespacePicker(ns, go);
  const secrets = which === 'secrets';
  const columns = secrets ? ['Name', 'Namespace', 'Type', 'Keys', 'Created'] : ['Name', 'Namespace', 'Keys', 'Created'];
  const body = h('tbody', { id: which });
  const problem = h('div');
  const more = h('button', { type: 'button', id: 'more', hidden: true }, 'More');
  const nsq = ns ? `?ns=${encodeURIComponent(ns)}` : '';
  // The secrets tab shows when the token may read secrets here (a viewer often may not).
  const secretsTab = secrets ? link(`#/secrets${nsq}`, 'Secrets') : rights.need(link(`#/secrets${nsq}`, 'Secrets'), 'read', 'secret', ns);
  main.append(h('h1', {}, 'Config'),
    h('nav', { class: 'subnav' }, link(`#/configmaps${nsq}`, 'Configmaps'), secretsTab),
    h('div', { class: 'toolbar' }, h('label', {}, 'Namespace', picker.select)),
    secrets ? h('p', { class: 'muted' }, 'Secrets are listed with their keys only: their values never reach this page.') : '',
    problem, h('table', {}, h('thead', {}, h('tr', {}, columns.map((x) => h('th', {}, x)))), body), h('div', { class: 'pager' }, more));
  main.querySelector(`.subnav a[href^="#/${which}"]`).classList.add('current');
  // A token limited to some namespaces lands in the first it may read in, as elsewhere.
  let painted = false;
  let moved = false;
  const onError = (err) => {
    problem.replaceChildren(errorBox(err));
    if (ns || moved || !(err instanceof APIError) || err.status !== 403) return;
    moved = true;
    get('/v1/namespaces', { signal }).then((l) => { if ((l.items || []).length && !signal.aborted) go({ ns: l.items[0] }); }).catch(() => {});
  };
  return followPages({
    plural: which, ns, params: secrets ? { keysOnly: 'true' } : {}, body, columns: columns.length, more, signal, onError,
    row: secrets ? secretRow : configmapRow,
    listed: () => {
      problem.replaceChildren();
      if (painted) return;
      painted = true;
      performance.mark('berth:page-painted');
      main.dataset.painted = which;
      picker.fill(get('/v1/namespaces', { signal }).then((l) => l.items || []));
    },
  });
}

export const configmapsPage = (ctx) => configPage('configmaps', ctx);
export const secretsPage = (ctx) => configPage('secrets', ctx);

function itemRows(cm) {
  return Object.keys(cm.datas || {}).sort().map((k) => {
    const d = cm.datas[k];
    let value;
    if (remote(d)) {
      // Fetched from a URL by the node: the URL and its user, never the password.
      value = h('span', {}, `${d.type} ${d.content}`, d.remoteUser ? ` (user ${d.remoteUser}${d.remotePasswd ? ', with a password' : ''})` : '');
    } else {
      const { text } = decoded(d.content);
      value = text === null ? h('span', { class: 'muted' }, `binary, ${bytes(dataSize(d.content))}`) : h('pre', { class: 'value' }, text);
    }
    return h('tr', { dataset: { key: k } }, h('td', {}, k), h('td', {}, d.type || 'file'),
      h('td', {}, remote(d) ? '' : bytes(dataSize(d.content))), h('td', { class: 'value' }, value));
  });
}

// configmapPage is one configmap: each key with its type, size and value, live.
export async function configmapPage({ main, args, signal }) {
  const [ns, name] = args;
  const items = h('tbody', { id: 'items' });
  const summary = h('p', { class: 'muted' });
  const problem = h('div');
  main.append(h('h1', {}, `Configmap ${ns}/${name}`), summary, problem,
    h('table', {}, h('thead', {}, h('tr', {}, ['Key', 'Type', 'Size', 'Value'].map((x) => h('th', {}, x)))), items));
  const show = (cm) => {
    const m = cm.metadata;
    summary.textContent = `${Object.keys(cm.datas || {}).length} keys; created ${age(m.creationTimestamp)} ago; revision ${m.resourceVersion}`;
    items.replaceChildren(...itemRows(cm));
  };
  let first = await get(objectPath('configmaps', ns, name), { signal }); // a missing configmap fails the page at once
  keepWatching(signal, async () => {
    const cm = first || await get(objectPath('configmaps', ns, name), { signal });
    first = null;
    show(cm);
    await watch(objectPath('configmaps', ns) + query({ watch: 'true', name, resourceVersion: cm.metadata.resourceVersion }), (ev) => {
      if (!ev.object) return;
      if (ev.type === 'DELETED') summary.prepend(h('span', { class: 'error' }, 'This configmap was deleted. '));
      else show(ev.object);
    }, signal);
  }, (err) => problem.replaceChildren(errorBox(err)));
}
