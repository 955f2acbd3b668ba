// Cluster policy (docs/policy.md): the namespaces the token may read with their quota
// beside their usage and their limit defaults (`berth quota get`, `berth describe
// namespace`), the priority classes (`berth get priorityclasses`) and the admission
// webhook configurations (`berth get admissionwebhooks`, `berth describe
// admissionwebhook`). A page or a namespace the token may not read says so instead of
// breaking.
import { APIError, get } from './api.js';
import { h, age, errorBox, table } from './dom.js';
import { quotaRows, defaultRows, hooksOf, hookType, failurePolicy, timeoutText, rulesText, selectorText } from './policyview.js';

const pages = [['namespaces', 'Namespaces'], ['priorityclasses', 'Priority classes'], ['admissionwebhooks', 'Admission webhooks']];

function subnav(current) {
  return h('nav', { class: 'subnav' }, pages.map(([p, title]) => h('a', { href: `#/${p}`, class: p === current ? 'current' : '' }, title)));
}

// refusal is the "not allowed" state of what the token may not read: the server's own
// words; any other failure is an error.
function refusal(err, what) {
  if (err instanceof APIError && err.status === 403) {
    return h('p', { class: 'denied', role: 'alert', dataset: { denied: what } }, `Not allowed: ${err.message}`);
  }
  return errorBox(err);
}

// show reads path and draws it into box, or the refusal; box's data-loaded says which
// came (the UI tests wait on it).
async function show(box, path, what, signal, draw) {
  try {
    const v = await get(path, { signal });
    box.replaceChildren(...[draw(v)].flat());
  } catch (err) {
    if (signal.aborted) return;
    box.replaceChildren(refusal(err, what));
  }
  box.dataset.loaded = 'true';
}

// usageBar is a resource's use of its limit: a bar filled to the share used, red from
// 90% (policyview.js, level).
function usageBar(r) {
  if (r.percent === null) return h('span', { class: 'muted' }, r.limit === 0 ? 'forbidden' : '');
  const fill = h('span', { class: 'fill', style: `width: ${Math.min(100, r.percent)}%` });
  return h('span', { class: 'bar', title: `${r.percent}% of the limit` }, fill);
}

// quotaCard is one namespace's quota, usage and limit defaults.
function quotaCard(q) {
  const rows = quotaRows(q).map((r) => h('tr', { class: r.level === 'hot' || r.level === 'over' ? `hot ${r.level}` : '', dataset: { resource: r.name, level: r.level } },
    h('td', {}, r.name), h('td', { class: 'used' }, r.usedText), h('td', { class: 'limit' }, r.limitText),
    h('td', { class: 'share' }, usageBar(r), r.percent === null ? '' : ` ${r.percent}%`)));
  const defaults = defaultRows((q.limits || {}).limitDefaults);
  return [
    q.default ? h('p', { class: 'muted' }, 'Storage limits are the cluster\'s defaults.') : '',
    table(['Resource', 'Used', 'Limit', 'Share'], rows, { class: 'quota' }),
    h('h3', {}, 'Limit defaults (per task)'),
    defaults.length
      ? table(['Resource', 'Default request', 'Default limit', 'Max'], defaults.map((r) => h('tr', {}, r.map((c) => h('td', {}, c)))), { class: 'defaults' })
      : h('p', { class: 'muted defaults' }, 'None: a task without requests gets 1 cpu, 64MB memory, 64MB disk.'),
  ];
}

// namespaceSection reads and draws one namespace's quota into a section of its own.
function namespaceSection(ns, signal) {
  const box = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const section = h('section', { class: 'card namespace', dataset: { ns } },
    h('h2', {}, h('a', { href: `#/namespace/${encodeURIComponent(ns)}` }, ns)), box);
  return { section, load: () => show(box, `/v1/namespaces/${encodeURIComponent(ns)}/quota`, 'quota', signal, quotaCard) };
}

// quotaParallel bounds the quota reads in flight at once.
const quotaParallel = 4;

export async function namespacesPage({ main, signal }) {
  const list = h('div', { id: 'namespaces' }, h('p', { class: 'muted' }, 'Loading…'));
  main.append(h('h1', {}, 'Namespaces'), subnav('namespaces'), list);
  let names;
  try {
    names = (await get('/v1/namespaces', { signal })).items || [];
  } catch (err) {
    if (!signal.aborted) list.replaceChildren(refusal(err, 'namespaces'));
    return;
  }
  if (!names.length) {
    list.replaceChildren(h('p', { class: 'muted' }, 'This token may read no namespace.'));
    return;
  }
  const sections = names.map((ns) => namespaceSection(ns, signal));
  list.replaceChildren(...sections.map((s) => s.section));
  const queue = [...sections];
  const worker = async () => {
    while (queue.length && !signal.aborted) await queue.shift().load();
  };
  await Promise.all(Array.from({ length: quotaParallel }, worker));
  list.dataset.loaded = 'true';
}

export async function namespacePage({ main, args, signal }) {
  const [ns] = args;
  const s = namespaceSection(ns, signal);
  main.append(h('h1', {}, `Namespace ${ns}`), subnav('namespaces'), h('div', { id: 'namespaces' }, s.section));
  await s.load();
  document.getElementById('namespaces').dataset.loaded = 'true';
}

export async function priorityClassesPage({ main, signal }) {
  const box = h('div', { id: 'priorityclasses' }, h('p', { class: 'muted' }, 'Loading…'));
  main.append(h('h1', {}, 'Priority classes'), subnav('priorityclasses'), box);
  await show(box, '/v1/priorityclasses', 'priorityclasses', signal, (list) => {
    const items = [...(list.items || [])].sort((a, b) => b.value - a.value || a.metadata.name.localeCompare(b.metadata.name));
    if (!items.length) return h('p', { class: 'muted' }, 'No priority classes: every workload has priority 0.');
    return table(['Name', 'Value', 'Preemption policy', 'Global default', 'Description'], items.map((pc) => h('tr', { dataset: { key: pc.metadata.name } },
      h('td', {}, pc.metadata.name), h('td', { class: 'value' }, String(pc.value)),
      h('td', {}, pc.preemptionPolicy || 'PreemptLowerPriority'), h('td', {}, pc.globalDefault ? 'yes' : ''),
      h('td', {}, pc.description || ''))));
  });
}

const hookHref = (name) => `#/admissionwebhook/${encodeURIComponent(name)}`;

// hookRows are a configuration's hooks, one row each (name of the configuration first
// when listing many).
function hookRows(cfg, withConfig) {
  return hooksOf(cfg).map((hk) => h('tr', { dataset: { hook: hk.name } },
    withConfig ? h('td', {}, h('a', { href: hookHref(cfg.metadata.name) }, cfg.metadata.name)) : '',
    h('td', {}, hk.name), h('td', { class: 'type' }, hookType(cfg, hk)), h('td', { class: 'url' }, (hk.clientConfig || {}).url || ''),
    h('td', { class: 'rules' }, rulesText(cfg, hk).map((r) => h('div', {}, r))),
    h('td', { class: 'nsselector' }, selectorText(hk.namespaceSelector, 'all namespaces')),
    h('td', { class: 'policy' }, failurePolicy(hk)), h('td', {}, timeoutText(hk))));
}

const hookHeaders = ['Hook', 'Type', 'URL', 'Rules', 'Namespaces', 'Failure policy', 'Timeout'];

export async function webhooksPage({ main, signal }) {
  const box = h('div', { id: 'admissionwebhooks' }, h('p', { class: 'muted' }, 'Loading…'));
  main.append(h('h1', {}, 'Admission webhooks'), subnav('admissionwebhooks'), box);
  await show(box, '/v1/admissionwebhooks', 'admissionwebhooks', signal, (list) => {
    const items = list.items || [];
    if (!items.length) return h('p', { class: 'muted' }, 'No admission webhook configurations.');
    return table(['Configuration', ...hookHeaders], items.flatMap((cfg) => hookRows(cfg, true)));
  });
}

export async function webhookPage({ main, args, signal }) {
  const [name] = args;
  const box = h('div', { id: 'admissionwebhook' }, h('p', { class: 'muted' }, 'Loading…'));
  main.append(h('h1', {}, `Admission webhook ${name}`), subnav('admissionwebhooks'), box);
  await show(box, `/v1/admissionwebhooks/${encodeURIComponent(name)}`, 'admissionwebhook', signal, (cfg) => {
    const m = cfg.metadata || {};
    const objects = hooksOf(cfg).map((hk) => h('tr', { dataset: { hook: hk.name } }, h('td', {}, hk.name),
      h('td', { class: 'objselector' }, selectorText(hk.objectSelector, 'all objects')),
      h('td', {}, hk.reinvocationPolicy || 'Never'), h('td', {}, (hk.clientConfig || {}).caBundle ? 'its caBundle' : 'the cluster CA')));
    return [
      h('div', { class: 'card' }, h('dl', { class: 'kv' },
        h('dt', {}, 'Kind'), h('dd', {}, cfg.kind || ''),
        m.creationTimestamp ? [h('dt', {}, 'Created'), h('dd', { title: m.creationTimestamp }, `${age(m.creationTimestamp)} ago`)] : '',
        cfg.resourcesRef ? [h('dt', {}, 'Resources'), h('dd', {}, `${cfg.resourcesRef.operation} ${cfg.resourcesRef.kind}`)] : '')),
      h('h2', {}, 'Hooks'),
      table(hookHeaders, hookRows(cfg, false), { id: 'hooks' }),
      h('h2', {}, 'Objects and verification'),
      table(['Hook', 'Objects', 'Reinvocation', 'Verified by'], objects),
    ];
  });
}
