// Services, read-only: each service with its virtual IP, its ports and its endpoints, the
// ready instances with the address each port is reached at and the matching instances
// that get no traffic with the reason (docs/services.md). Services and their endpoints
// (one object per service, of its name, written by berth) follow their watches. A page
// holds 50 services and their endpoints, read one by one, so a cluster of thousands of
// services costs the page no more than a cluster of 50.
import { APIError, get, watch, objectPath, query } from './api.js';
import { h, chips, errorBox, link } from './dom.js';
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

// serviceRow is a service's row; until its endpoints are read (read false) their cells
// say so rather than "no instance matches".
function serviceRow(svc, eps, read) {
  const m = svc.metadata;
  if (!eps && !read) {
    const vip = (svc.spec.clusterIP || []).join(', ') || h('span', { class: 'muted' }, '…');
    return h('tr', { dataset: { key: `${m.namespace}/${m.name}` } },
      h('td', {}, m.name), h('td', {}, m.namespace), h('td', {}, svc.spec.type || 'ClusterIP'),
      h('td', { class: 'vip' }, vip), h('td', { class: 'ports' }, servicePorts(svc)), h('td', {}, chips(svc.spec.selector)),
      h('td', { class: 'count muted' }, '…'), h('td', { class: 'endpoints muted' }, 'reading…'));
  }
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

const pageSize = 50;
const key = (o) => `${o.metadata.namespace}/${o.metadata.name}`;
const newer = (a, b) => Number(a.metadata.resourceVersion || 0) > Number(b.metadata.resourceVersion || 0);

// endpointsOf reads the endpoints of the services shown, one request each (50 at most, in
// parallel over the connection): a page never reads every service's endpoints.
async function endpointsOf(list, into, signal) {
  await Promise.all(list.map(async (svc) => {
    try {
      const eps = await get(objectPath('endpoints', svc.metadata.namespace, svc.metadata.name), { signal });
      into.set(key(eps), eps);
    } catch (err) {
      if (!(err instanceof APIError) || err.status !== 404) throw err; // 404: none written yet
    }
  }));
}

// followShown follows plural's watch from rev and keeps byKey's objects current: a change
// of one shown, or of one admits lets in, is applied unless an answer read later already
// holds a newer version. seen hears of every event first.
function followShown(plural, ns, rev, byKey, { admits, seen = () => {} }, changed, signal) {
  return watch(objectPath(plural, ns) + query({ watch: 'true', resourceVersion: rev }), (ev) => {
    if (ev.type === 'ERROR' || !ev.object) return;
    seen(ev);
    const k = key(ev.object);
    const had = byKey.get(k);
    if (!had && !admits(k, ev)) return;
    if (had && !newer(ev.object, had)) return;
    if (ev.type === 'DELETED') byKey.delete(k);
    else byKey.set(k, ev.object);
    changed();
  }, signal);
}

export async function servicesPage({ main, params, signal }) {
  const ns = params.get('ns') || '';
  const cont = params.get('continue') || '';
  const go = (changes) => { location.hash = withParams(params, { continue: '', ...changes }); };
  const picker = namespacePicker(ns, go);
  const rows = h('tbody', { id: 'services' });
  const count = h('span', { class: 'muted', id: 'count' });
  const pager = h('div', { class: 'pager' });
  const problem = h('div');
  main.append(h('h1', {}, 'Services'), h('div', { class: 'toolbar' }, h('label', {}, 'Namespace', picker.select), count), problem,
    h('table', {}, h('thead', {}, h('tr', {}, ['Name', 'Namespace', 'Type', 'VIP', 'Ports', 'Selector', 'Instances', 'Endpoints'].map((x) => h('th', {}, x)))), rows),
    pager);
  picker.fill(get('/v1/namespaces', { signal }).then((l) => l.items || []));
  const services = new Map();
  const endpoints = new Map();
  let total = null;
  let endpointsRead = false;
  const draw = () => {
    const list = [...services.values()].sort((a, b) => key(a).localeCompare(key(b)));
    rows.replaceChildren(...list.map((s) => serviceRow(s, endpoints.get(key(s)), endpointsRead)));
    if (!list.length) rows.append(h('tr', {}, h('td', { colspan: 8, class: 'muted' }, 'No services here.')));
    count.textContent = total != null ? `${list.length} of ${total}` : `${list.length} shown`;
  };
  // A token limited to some namespaces may not list every namespace's services: the
  // page goes to the first namespace it may read in, as the workloads page does.
  let moved = false;
  let painted = false;
  const onError = (err) => {
    problem.replaceChildren(errorBox(err));
    if (ns || moved || !(err instanceof APIError) || err.status !== 403) return;
    moved = true;
    get('/v1/namespaces', { signal }).then((l) => { if ((l.items || []).length && !signal.aborted) go({ ns: l.items[0] }); }).catch(() => {});
  };
  await keepWatching(signal, async () => {
    const list = await get(objectPath('services', ns) + query({ limit: pageSize, continue: cont }), { signal });
    services.clear();
    for (const o of list.items) services.set(key(o), o);
    endpoints.clear();
    endpointsRead = false;
    total = list.total ?? null;
    problem.replaceChildren();
    draw();
    if (!painted) { // the page has painted once its first list is drawn (the benchmark's mark)
      painted = true;
      performance.mark('berth:page-painted');
    }
    // The services show at once; their endpoints fill in as they are read.
    await endpointsOf(list.items, endpoints, signal);
    endpointsRead = true;
    draw();
    pager.replaceChildren(cont ? link(withParams(params, { continue: '' }), '« First page') : '',
      list.continue ? link(withParams(params, { continue: list.continue }), 'Next page »') : '');
    // A new service shows here when this is the last page and it has room; one that
    // does not fit lists the page again, for its pager to offer the next page. Endpoints
    // follow the services shown. When either watch ends (the server cut it, 410) the page
    // lists again, and the other stops with it.
    const cycle = new AbortController();
    const stop = () => cycle.abort();
    signal.addEventListener('abort', stop, { once: true });
    let relist = false;
    const lastPage = !list.continue;
    const servicesSeen = (ev) => {
      if (total == null) return;
      if (ev.type === 'ADDED') total++;
      else if (ev.type === 'DELETED') total--;
    };
    const admitService = (k, ev) => {
      if (ev.type !== 'ADDED' || !lastPage) return false;
      if (services.size < pageSize) return true;
      relist = true;
      cycle.abort();
      return false;
    };
    try {
      await Promise.race([
        followShown('services', ns, list.resourceVersion, services, { admits: admitService, seen: servicesSeen }, draw, cycle.signal),
        followShown('endpoints', ns, list.resourceVersion, endpoints, { admits: (k) => services.has(k) }, draw, cycle.signal),
      ]);
    } catch (err) {
      if (!relist || signal.aborted) throw err;
    } finally {
      signal.removeEventListener('abort', stop);
      cycle.abort();
    }
  }, onError);
}
