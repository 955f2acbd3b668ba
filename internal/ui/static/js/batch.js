// Batch work: the workflows, jobs and cronjobs of a namespace, each list a page at a
// time kept current by its watch (pagedlist.js), the archived workflows under the stored
// ones (wfarchive.js); a job's page with its runs' history and
// a cronjob's page with the runs it made (api/v4/cronjob.go: status.active, and the
// berth.io/cronjob label on its jobs).
import { APIError, call, get, watch, objectPath, query } from './api.js';
import { h, age, link, errorBox } from './dom.js';
import { keepWatching, withParams } from './live.js';
import { followPages } from './pagedlist.js';
import { namespacePicker } from './workloads.js';
import { archivePageSize, archivePath, archivedHref } from './wfarchive.js';

// The label naming a job's cronjob and the annotation with the time it was scheduled
// for (api/v4/cronjob.go).
const cronJobLabel = 'berth.io/cronjob';
const scheduledTimeAnnotation = 'berth.io/scheduled-time';

// The phases of workflows and jobs, coloured as the console colours others.
const okPhases = new Set(['Succeeded', 'Complete']);
const warnPhases = new Set(['Pending', 'Running', 'Suspended']);
const badPhases = new Set(['Failed', 'Error']);

export function phaseBadge(phase) {
  const p = phase || 'Pending';
  const cls = okPhases.has(p) ? 'ok' : warnPhases.has(p) ? 'warn' : badPhases.has(p) ? 'bad' : '';
  return h('span', { class: `badge ${cls}`, dataset: { phase: p } }, p);
}

// duration is how long from start to end (or now), in the console's short words.
export function duration(start, end) {
  if (!start) return '';
  const s = Math.max(0, ((end ? new Date(end) : new Date()) - new Date(start)) / 1000);
  if (s < 60) return `${Math.floor(s)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${Math.floor(s % 60)}s`;
  return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
}

// progress counts the Pod nodes finished of those the object holds ('' when the nodes
// are kept outside it: the workflow's page reads them).
export function progress(nodes) {
  const pods = Object.values(nodes || {}).filter((n) => n.type === 'Pod');
  if (!pods.length) return '';
  const done = pods.filter((n) => ['Succeeded', 'Failed', 'Error', 'Skipped', 'Omitted'].includes(n.phase)).length;
  return `${done}/${pods.length}`;
}

const href = (route, m) => `#/${route}/${encodeURIComponent(m.namespace)}/${encodeURIComponent(m.name)}`;

const lists = {
  workflows: {
    title: 'Workflows', columns: ['Name', 'Namespace', 'Phase', 'Progress', 'Started', 'Duration', 'Message'],
    row: (o) => {
      const st = o.status || {};
      return h('tr', {}, h('td', {}, link(href('wf', o.metadata), o.metadata.name)), h('td', {}, o.metadata.namespace),
        h('td', {}, phaseBadge(st.phase)), h('td', { class: 'progress' }, progress(st.nodes)),
        h('td', {}, st.startedAt ? `${age(st.startedAt)} ago` : ''), h('td', {}, duration(st.startedAt, st.finishedAt)),
        h('td', { class: 'message' }, st.message || ''));
    },
  },
  jobs: {
    title: 'Jobs', columns: ['Name', 'Namespace', 'Phase', 'Completions', 'Active', 'Failed', 'Duration', 'Age'],
    row: (o) => {
      const st = o.status || {};
      return h('tr', {}, h('td', {}, link(href('job', o.metadata), o.metadata.name)), h('td', {}, o.metadata.namespace),
        h('td', {}, phaseBadge(st.phase)), h('td', {}, `${st.succeeded || 0}/${(o.spec || {}).completions || 1}`),
        h('td', {}, String(st.active || 0)), h('td', {}, String(st.failed || 0)),
        h('td', {}, duration(st.startTime, st.completionTime)), h('td', {}, age(o.metadata.creationTimestamp)));
    },
  },
  cronjobs: {
    title: 'Cron jobs', columns: ['Name', 'Namespace', 'Schedule', 'Suspend', 'Active', 'Last run', 'Age'],
    row: (o) => {
      const spec = o.spec || {};
      const st = o.status || {};
      const active = (st.active || []).length;
      const last = st.lastScheduleTime || '';
      return h('tr', {}, h('td', {}, link(href('cronjob', o.metadata), o.metadata.name)), h('td', {}, o.metadata.namespace),
        h('td', { class: 'schedule' }, [spec.schedule, spec.timeZone].filter(Boolean).join(' ')), h('td', {}, spec.suspend ? 'yes' : ''),
        h('td', {}, String(active)), h('td', {}, last ? `${age(last)} ago` : ''), h('td', {}, age(o.metadata.creationTimestamp)));
    },
  },
};

// listPage is one of the lists, in a namespace or all, with the batch pages' tabs.
function listPage(plural, { main, params, signal }) {
  const l = lists[plural];
  const ns = params.get('ns') || '';
  const go = (changes) => { location.hash = withParams(params, changes); };
  const picker = namespacePicker(ns, go);
  const body = h('tbody', { id: plural });
  const problem = h('div');
  const more = h('button', { type: 'button', id: 'more', hidden: true }, 'More');
  const nsq = ns ? `?ns=${encodeURIComponent(ns)}` : '';
  main.append(h('h1', {}, l.title),
    h('nav', { class: 'subnav' }, Object.entries(lists).map(([p, x]) => h('a', { href: `#/${p}${nsq}`, class: p === plural ? 'current' : '' }, x.title))),
    h('div', { class: 'toolbar' }, h('label', {}, 'Namespace', picker.select)),
    problem, h('table', { id: `${plural}-table` }, h('thead', {}, h('tr', {}, l.columns.map((x) => h('th', {}, x)))), body),
    h('div', { class: 'pager' }, more), plural === 'workflows' ? archivedSection(ns, signal) : '');
  let painted = false;
  return followPages({
    plural, ns, body, columns: l.columns.length, more, signal, row: l.row,
    onError: (err) => {
      const missing = err instanceof APIError && err.status === 404;
      problem.replaceChildren(missing ? h('p', { class: 'muted' }, `This server does not serve ${plural} (${err.message}).`) : errorBox(err));
      main.dataset.painted = plural;
    },
    listed: () => {
      problem.replaceChildren();
      if (painted) return;
      painted = true;
      main.dataset.painted = plural;
      picker.fill(get('/v1/namespaces', { signal }).then((x) => x.items || []));
    },
  });
}

const archivedColumns = ['Name', 'Phase', 'Started', 'Duration', 'Archived', 'Expires', 'Message'];

function archivedRow(ns, e) {
  const wf = e.workflow || {};
  const m = wf.metadata || {};
  const st = wf.status || {};
  return h('tr', { dataset: { key: `${m.name}/${st.uid || ''}` } },
    h('td', {}, link(archivedHref(ns, m.name, st.uid), m.name)), h('td', {}, phaseBadge(st.phase)),
    h('td', {}, st.startedAt ? `${age(st.startedAt)} ago` : ''), h('td', {}, duration(st.startedAt, st.finishedAt)),
    h('td', {}, e.archivedAt ? `${age(e.archivedAt)} ago` : ''), h('td', {}, e.expiresAt ? new Date(e.expiresAt).toLocaleString() : 'never'),
    h('td', { class: 'message' }, st.message || ''));
}

// archivedSection lists ns's archived workflows under the stored ones, a page at a time
// ("More" reads the next with the route's continue), each row opening its page. Workflows
// only move into the archive, an hour after they ended by default: it is read when the
// page opens, not watched. The archive is a namespace's (its route is).
function archivedSection(ns, signal) {
  const body = h('tbody', { id: 'archived' });
  const more = h('button', { type: 'button', id: 'archived-more', hidden: true }, 'More');
  const problem = h('div');
  const section = h('section', { id: 'archived-section' }, h('h2', {}, 'Archived'), problem,
    h('table', { id: 'archived-table' }, h('thead', {}, h('tr', {}, archivedColumns.map((x) => h('th', {}, x)))), body),
    h('div', { class: 'pager' }, more));
  const note = (text) => body.replaceChildren(h('tr', {}, h('td', { colspan: archivedColumns.length, class: 'muted' }, text)));
  if (!ns) {
    note('Pick a namespace to see its archived workflows.');
    return section;
  }
  let cont = '';
  const read = async () => {
    more.disabled = true;
    try {
      const page = await get(archivePath(ns, '', { params: { limit: archivePageSize, continue: cont } }), { signal });
      body.append(...(page.items || []).map((e) => archivedRow(ns, e)));
      cont = page.continue || '';
      if (!body.rows.length) note(`No archived workflows in ${ns}.`);
      problem.replaceChildren();
    } catch (err) {
      if (signal.aborted) return;
      const missing = err instanceof APIError && err.status === 404;
      problem.replaceChildren(missing ? h('p', { class: 'muted' }, `This server keeps no workflow archive (${err.message}).`) : errorBox(err));
    } finally {
      more.disabled = false;
      more.hidden = !cont;
      section.dataset.painted = 'true';
    }
  };
  more.addEventListener('click', read);
  read();
  return section;
}

export const workflowsPage = (ctx) => listPage('workflows', ctx);
export const jobsPage = (ctx) => listPage('jobs', ctx);
export const cronjobsPage = (ctx) => listPage('cronjobs', ctx);

// throttled calls fn at most once every ms (the last call in a burst is made at its end):
// a job's status changes at each completion, and its runs are not listed each time.
function throttled(fn, ms, signal, onError) {
  let last = 0;
  let timer = null;
  signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
  return () => {
    if (timer) return;
    const wait = Math.max(0, last + ms - Date.now());
    timer = setTimeout(() => {
      timer = null;
      last = Date.now();
      fn().catch((err) => { if (!signal.aborted && onError) onError(err); });
    }, wait);
  };
}

function kv(pairs) {
  return h('dl', { class: 'kv' }, pairs.filter(([, v]) => v !== '' && v !== undefined && v !== null)
    .flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

// followOne shows one object and follows its watch until the page is left.
function followOne(plural, ns, name, show, problem, signal) {
  return keepWatching(signal, async () => {
    const obj = await get(objectPath(plural, ns, name), { signal });
    show(obj);
    await watch(objectPath(plural, ns) + query({ watch: 'true', name, resourceVersion: obj.metadata.resourceVersion }), (ev) => {
      if (ev.object && ev.type !== 'DELETED' && ev.object.metadata.name === name) show(ev.object);
    }, signal);
  }, (err) => problem.replaceChildren(errorBox(err)));
}

function runRows(records) {
  return [...(records || [])].reverse().map((r) => h('tr', { dataset: { key: r.taskgroup } },
    h('td', {}, String(r.index)), h('td', {}, String(r.attempt || 0)), h('td', {}, r.taskgroup), h('td', {}, r.node || ''),
    h('td', {}, phaseBadge(r.result)), h('td', {}, String(r.exitCode)), h('td', {}, duration(r.startedAt, r.finishedAt)),
    h('td', { class: 'message' }, r.message || '')));
}

// jobPage is one job: its counts, a Suspend/Resume button (spec.suspend), the runs
// that still have a task group (their logs) and the history of the runs that ended.
export async function jobPage({ main, args, signal, rights }) {
  const [ns, name] = args;
  const summary = h('div', { class: 'card', id: 'job-summary' });
  const problem = h('div');
  const toggle = rights.need(h('button', { type: 'button', id: 'job-suspend' }, 'Suspend'), 'write', 'job', ns);
  const active = h('tbody', { id: 'job-runs' });
  const history = h('tbody', { id: 'job-history' });
  main.append(h('h1', {}, `Job ${ns}/${name}`), h('div', { class: 'toolbar' }, toggle, link(`#/jobs?ns=${encodeURIComponent(ns)}`, 'all jobs')),
    problem, summary, h('h2', {}, 'Runs'), h('table', {}, h('thead', {}, h('tr', {}, ['Task group', 'Phase', 'Logs'].map((x) => h('th', {}, x)))), active),
    h('h2', {}, 'History'), h('table', {}, h('thead', {}, h('tr', {},
      ['Index', 'Attempt', 'Task group', 'Node', 'Result', 'Exit code', 'Duration', 'Message'].map((x) => h('th', {}, x)))), history));
  let current = null;
  toggle.addEventListener('click', async () => {
    toggle.disabled = true;
    try {
      const j = structuredClone(current);
      j.spec.suspend = !j.spec.suspend;
      delete j.status;
      await call('PUT', objectPath('jobs', ns, name), j);
    } catch (err) {
      problem.replaceChildren(errorBox(err));
    } finally {
      toggle.disabled = false;
    }
  });
  const runs = throttled(async () => {
    const l = await get(objectPath('taskgroups', ns) + query({ owner: `job/${name}`, limit: 500 }), { signal });
    active.replaceChildren(...(l.items || []).map((tg) => h('tr', { dataset: { key: tg.metadata.name } },
      h('td', {}, link(`#/taskgroup/${encodeURIComponent(ns)}/${encodeURIComponent(tg.metadata.name)}`, tg.metadata.name)),
      h('td', {}, phaseBadge((tg.status || {}).phase)),
      h('td', {}, link(`#/logs/${encodeURIComponent(ns)}/${encodeURIComponent(tg.metadata.name)}`, 'logs')))));
  }, 2000, signal, (err) => problem.replaceChildren(errorBox(err)));
  const show = (j) => {
    current = j;
    const st = j.status || {};
    toggle.textContent = j.spec.suspend ? 'Resume' : 'Suspend';
    summary.replaceChildren(kv([['Phase', phaseBadge(st.phase)], ['Completions', `${st.succeeded || 0}/${j.spec.completions || 1}`],
      ['Active', String(st.active || 0)], ['Failed', String(st.failed || 0)], ['Completed indexes', st.completedIndexes],
      ['Started', st.startTime ? `${age(st.startTime)} ago` : ''], ['Duration', duration(st.startTime, st.completionTime)],
      ['Message', st.message]]));
    history.replaceChildren(...runRows(st.finished));
    main.dataset.painted = 'job';
    runs();
  };
  return followOne('jobs', ns, name, show, problem, signal);
}

// cronjobPage is one cronjob: its spec's schedule and policies, its status, a Trigger
// button, and the jobs it made (those whose berth.io/cronjob label names it, as the cron
// controller finds them) newest first, the active ones marked.
export async function cronjobPage({ main, args, signal, rights }) {
  const [ns, name] = args;
  const summary = h('div', { class: 'card', id: 'cronjob-summary' });
  const problem = h('div');
  const trigger = rights.need(h('button', { type: 'button', id: 'cronjob-trigger', class: 'primary' }, 'Run now'), 'write', 'cronjob', ns);
  const made = h('tbody', { id: 'cronjob-history' });
  main.append(h('h1', {}, `Cron job ${ns}/${name}`), h('div', { class: 'toolbar' }, trigger, link(`#/cronjobs?ns=${encodeURIComponent(ns)}`, 'all cron jobs')),
    problem, summary, h('h2', {}, 'History'),
    h('table', {}, h('thead', {}, h('tr', {}, ['Job', 'Phase', 'Completions', 'Scheduled for', 'Started', 'Duration'].map((x) => h('th', {}, x)))), made));
  let active = new Set();
  trigger.addEventListener('click', async () => {
    trigger.disabled = true;
    try {
      await call('POST', objectPath('cronjobs', ns, name) + '/actions/trigger');
    } catch (err) {
      problem.replaceChildren(errorBox(err));
    } finally {
      trigger.disabled = false;
    }
  });
  const jobs = throttled(async () => {
    const l = await get(objectPath('jobs', ns) + query({ limit: 500 }), { signal });
    const mine = (l.items || []).filter((j) => (j.metadata.labels || {})[cronJobLabel] === name);
    mine.sort((a, b) => String(b.metadata.creationTimestamp).localeCompare(String(a.metadata.creationTimestamp)));
    made.replaceChildren(...mine.map((j) => {
      const st = j.status || {};
      const at = (j.metadata.annotations || {})[scheduledTimeAnnotation];
      return h('tr', { dataset: { key: j.metadata.name, active: String(active.has(j.metadata.name)) } },
        h('td', {}, link(href('job', j.metadata), j.metadata.name), active.has(j.metadata.name) ? ' (active)' : ''), h('td', {}, phaseBadge(st.phase)),
        h('td', {}, `${st.succeeded || 0}/${(j.spec || {}).completions || 1}`), h('td', {}, at ? `${age(at)} ago` : 'by hand'),
        h('td', {}, st.startTime ? `${age(st.startTime)} ago` : ''), h('td', {}, duration(st.startTime, st.completionTime)));
    }));
  }, 2000, signal, (err) => problem.replaceChildren(errorBox(err)));
  const show = (c) => {
    const spec = c.spec || {};
    const known = [['Schedule', spec.schedule], ['Time zone', spec.timeZone], ['Concurrency', spec.concurrencyPolicy],
      ['Suspend', spec.suspend ? 'yes' : 'no']];
    const st = c.status || {};
    active = new Set((st.active || []).map((r) => r.name));
    const when = (t) => (t ? `${age(t)} ago` : 'never');
    summary.replaceChildren(kv([...known, ['Last scheduled', when(st.lastScheduleTime)], ['Last succeeded', when(st.lastSuccessfulTime)],
      ['Active', h('span', { id: 'cronjob-active' }, String(active.size))], ...(st.message ? [['Message', st.message]] : [])]));
    main.dataset.painted = 'cronjob';
    jobs();
  };
  return followOne('cronjobs', ns, name, show, problem, signal);
}
