// Services, read-only: each service with its virtual IP, its ports and its endpoints, the
// ready instances with the address each port is reached at and the matching instances
// that get no traffic with the reason (docs/services.md). Services and their endpoints
// (one object per service, of its name, written by berth) follow their watches.
import { APIError, get, watch, objectPath, query } from './api.js';
import { h, chips, errorBox } from './dom.js';
import { keepWatching, withParams } from './live.js';
import { namespacePicker } from './workloads.js';

const instanceHref = (ns, name) => `#/taskgroup/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`;

function servicePorts(svc) {
  return (svc.spec.ports || []).map((p) => h('div', {},
    `${p.name ? p.name + ' ' : ''}${p.servicePort}/${(p.protocol || 'tcp').toUpperCase()}${p.targetPort ? ' → ' + p.targetPort : ''}${p.nodePort ? ' (node port ' + p.nodePort + ')' : ''}`));
}

function endpointLine(ns, ep, ready) {
  const t = ep.targetRef || {};
  const addrs = (ep.ports || []).map((p) => `${p.name}: ${p.ip}:${p.port}`).join(', ');
  return h('li', { class: ready ? 'ready' : 'not-ready', dataset: { id: t.id || '' } },
    h('a', { href: instanceHref(t.namespace || ns, t.id || '') }, `${t.name || ''} #${t.index ?? ''}`),
    ep.node ? ` on ${ep.node}` : '',
    addrs ? ` — ${addrs}` : '',
    ready ? '' : h('span', { class: 'why' }, ` — not ready: ${ep.reason || 'unknown'}`));
}

function serviceRow(svc, eps) {
  const m = svc.metadata;
  const ready = (eps && eps.eps) || [];
  const notReady = (eps && eps.notReady) || [];
  const vip = eps && eps.vip ? eps.vip : (svc.spec.clusterIP || []).join(', ') || h('span', { class: 'muted' }, svc.spec.type === 'None' ? 'none (headless)' : 'not yet');
  return h('tr', { dataset: { key: `${m.namespace}/${m.name}` } },
    h('td', {}, m.name), h('td', {}, m.namespace), h('td', {}, svc.spec.type || 'ClusterIP'),
    h('td', { class: 'vip' }, vip), h('td', { class: 'ports' }, servicePorts(svc)), h('td', {}, chips(svc.spec.selector)),
    h('td', { class: 'count' }, `${ready.length} ready${notReady.length ? `, ${notReady.length} not ready` : ''}`),
    h('td', { class: 'endpoints' }, ready.length || notReady.length
      ? h('ul', { class: 'eps' }, ready.map((e) => endpointLine(m.namespace, e, true)), notReady.map((e) => endpointLine(m.namespace, e, false)))
      : h('span', { class: 'muted' }, 'no instance matches')));
}

// follow lists plural into byKey and follows its watch, calling changed after each change
// (and listed after each list).
function follow(plural, ns, byKey, changed, signal, onError, listed) {
  const key = (o) => `${o.metadata.namespace}/${o.metadata.name}`;
  return keepWatching(signal, async () => {
    const list = await get(objectPath(plural, ns) + query({ limit: 500 }), { signal });
    byKey.clear();
    for (const o of list.items) byKey.set(key(o), o);
    changed();
    listed();
    await watch(objectPath(plural, ns) + query({ watch: 'true', resourceVersion: list.resourceVersion }), (ev) => {
      if (ev.type === 'ERROR' || !ev.object) return;
      if (ev.type === 'DELETED') byKey.delete(key(ev.object));
      else byKey.set(key(ev.object), ev.object);
      changed();
    }, signal);
  }, onError);
}

export async function servicesPage({ main, params, signal }) {
  const ns = params.get('ns') || '';
  const go = (changes) => { location.hash = withParams(params, changes); };
  const picker = namespacePicker(ns, go);
  const rows = h('tbody', { id: 'services' });
  const problem = h('div');
  main.append(h('h1', {}, 'Services'), h('div', { class: 'toolbar' }, h('label', {}, 'Namespace', picker.select)), problem,
    h('table', {}, h('thead', {}, h('tr', {}, ['Name', 'Namespace', 'Type', 'VIP', 'Ports', 'Selector', 'Instances', 'Endpoints'].map((x) => h('th', {}, x)))), rows));
  picker.fill(get('/v1/namespaces', { signal }).then((l) => l.items || []));
  const services = new Map();
  const endpoints = new Map();
  const draw = () => {
    const list = [...services.values()].sort((a, b) => `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`));
    rows.replaceChildren(...list.map((s) => serviceRow(s, endpoints.get(`${s.metadata.namespace}/${s.metadata.name}`))));
    if (!list.length) rows.append(h('tr', {}, h('td', { colspan: 8, class: 'muted' }, 'No services here.')));
  };
  // A token limited to some namespaces may not list every namespace's services: the
  // page goes to the first namespace it may read in, as the workloads page does.
  let moved = false;
  const onError = (err) => {
    problem.replaceChildren(errorBox(err));
    if (ns || moved || !(err instanceof APIError) || err.status !== 403) return;
    moved = true;
    get('/v1/namespaces', { signal }).then((l) => { if ((l.items || []).length && !signal.aborted) go({ ns: l.items[0] }); }).catch(() => {});
  };
  // The page has painted once both lists are drawn (the benchmark's mark).
  let lists = 0;
  const listed = () => { if (++lists === 2) performance.mark('berth:page-painted'); };
  follow('services', ns, services, draw, signal, onError, listed);
  follow('endpoints', ns, endpoints, draw, signal, onError, listed);
}
