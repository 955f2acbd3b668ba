// One instance (task group): where it runs, its state and each task's, its ports, its
// environment (a secret's value never: its name and key), the GPUs it holds, and small
// live graphs of the CPU and memory its tasks use, measured by its node (GET
// .../taskgroups/NAME/usage, polled while the page is in view).
import { get, watch, objectPath, query } from './api.js';
import { h, badge, age, link, errorBox, bytes, mib, num, specPane } from './dom.js';
import { keepWatching, sleep } from './live.js';
import { instanceWaiting } from './status.js';
import { addSample, taskSpecs, ports, env } from './usage.js';
import { graph } from './graph.js';

const pollMs = 3000;
const ownerPlural = { application: 'applications', process: 'processes' };

function taskRows(tg) {
  const st = tg.status || {};
  const byName = new Map((st.tasks || []).map((t) => [t.name, t]));
  const gpus = (tg.spec.gpus || []);
  return taskSpecs(tg).map(({ name }) => {
    const t = byName.get(name) || { info: {} };
    const info = t.info || {};
    const ended = Boolean(info.FinishAt);
    const reason = [info.OOMKilled ? 'OOM killed' : '', t.message || info.Message || '', t.healthMessage || ''].filter(Boolean).join('; ');
    const held = gpus.filter((g) => g.task === name).map((g) => `#${g.index}${g.cores < 100 ? ` (${g.cores}%, ${g.memoryMiB} MiB)` : ''}`);
    return h('tr', { dataset: { task: name } },
      h('td', {}, name),
      h('td', { class: 'state' }, badge(t.status || 'Unknown')),
      h('td', { class: 'exit' }, ended ? String(info.ExitCode) : ''),
      h('td', { class: 'ended-why' }, reason),
      h('td', {}, info.StartAt ? `${age(info.StartAt)} ago` : ''),
      h('td', {}, String(tg.spec.reschedTimes || 0)),
      h('td', { class: 'gpus' }, held.join(', ')));
  });
}

// instancePriority is the priority the instance was created with, and its owner's class
// when the owner is read (docs/policy.md, "Priorities and preemption").
function instancePriority(tg, owner) {
  const cls = owner && owner.spec && owner.spec.priorityClassName;
  return `${tg.spec.priority || 0}${cls ? ` (${cls})` : ''}`;
}

function summaryOf(tg, owner) {
  const st = tg.status || {};
  const o = tg.spec.owner || {};
  const ownerLink = ownerPlural[o.kind] ? link(`#/w/${ownerPlural[o.kind]}/${encodeURIComponent(tg.metadata.namespace)}/${encodeURIComponent(o.name)}`, `${o.kind} ${o.name}`) : `${o.kind} ${o.name}`;
  const w = instanceWaiting(tg, owner);
  const phase = w ? h('span', { class: 'waiting' }, badge('Pending'), ` — ${w.what}: `, h('span', { class: 'why' }, w.reason)) : badge(st.phase);
  const ips = [...new Set((st.tasks || []).map((t) => (t.info || {}).IPAddress).filter(Boolean))];
  return h('dl', { class: 'kv' },
    h('dt', {}, 'Workload'), h('dd', {}, ownerLink, ` (instance ${tg.spec.index})`),
    h('dt', {}, 'Node'), h('dd', { id: 'node' }, tg.spec.node || h('span', { class: 'muted' }, 'not placed')),
    h('dt', {}, 'Phase'), h('dd', { id: 'phase' }, phase),
    st.message && !w ? [h('dt', {}, 'Message'), h('dd', { id: 'message' }, st.message)] : '',
    h('dt', {}, 'Host IP'), h('dd', { id: 'host-ip' }, st.hostIP || ''),
    h('dt', {}, 'IP'), h('dd', { id: 'ips' }, ips.join(', ') || (st.hostIP ? `${st.hostIP} (the node's network)` : '')),
    h('dt', {}, 'Restarts'), h('dd', {}, String(tg.spec.reschedTimes || 0)),
    h('dt', {}, 'Reserved'), h('dd', { id: 'reserved' }, reservedOf(tg.spec)),
    h('dt', {}, 'Tier'), h('dd', { id: 'tier' }, tg.spec.revocable ? 'revocable (runs on lent capacity, evicted first)' : 'guaranteed'),
    h('dt', {}, 'Priority'), h('dd', { id: 'priority' }, instancePriority(tg, owner)),
    st.startedAt ? [h('dt', {}, 'Started'), h('dd', {}, `${age(st.startedAt)} ago`)] : '',
    st.gpuProblem ? [h('dt', {}, 'GPUs'), h('dd', { class: 'error' }, st.gpuProblem)] : '');
}

// reservedOf reads what the instance holds on its node: its tasks' requests and its
// executor's overhead (docs/scheduling.md), the overhead told apart where the task group
// recorded it.
function reservedOf(spec) {
  const r = spec.resources || {};
  const o = spec.overhead || {};
  const text = `${num(r.cpu || 0)} cores, ${mib(r.memoryMB || 0)}`;
  if (!o.cpu && !o.memoryMB) return text;
  return [text, h('span', { class: 'muted overhead' }, ` — the tasks' requests and the executor's overhead of ${num(o.cpu || 0)} cores, ${mib(o.memoryMB || 0)}`)];
}

function portTable(tg) {
  const rows = ports(tg).map((p) => h('tr', {}, h('td', {}, p.task), h('td', {}, p.name), h('td', {}, p.containerPort ? String(p.containerPort) : ''),
    h('td', {}, p.hostPort > 0 ? String(p.hostPort) : h('span', { class: 'muted' }, 'none')), h('td', {}, p.protocol)));
  return rows.length ? rows : [h('tr', {}, h('td', { colspan: 5, class: 'muted' }, 'No ports.'))];
}

function envTable(tg) {
  const rows = [];
  for (const { name, spec } of taskSpecs(tg)) {
    for (const e of env(spec)) {
      rows.push(h('tr', {}, h('td', {}, name), h('td', {}, e.name),
        h('td', {}, e.from ? h('span', { class: 'muted from' }, `from ${e.from}`) : e.value)));
    }
  }
  return rows.length ? rows : [h('tr', {}, h('td', { colspan: 3, class: 'muted' }, 'No environment variables.'))];
}

function drawUsage(box, series) {
  const charts = Object.entries(series).map(([task, s]) => {
    if (s.error) return h('div', { class: 'task-usage', dataset: { task } }, h('h3', {}, task), h('p', { class: 'muted' }, s.error));
    const cpuMax = Math.max(0.1, ...s.cpu.map(([, v]) => v)) * 1.2;
    const memMax = s.limit || Math.max(1, ...s.mem.map(([, v]) => v)) * 1.2;
    return h('div', { class: 'task-usage', dataset: { task } }, h('h3', {}, task),
      graph(`cpu-${task}`, 'CPU', [{ points: s.cpu, cls: 'line' }], cpuMax, (v) => `${num(v)} cores`),
      graph(`mem-${task}`, 'Memory', [{ points: s.mem, cls: 'line' }], memMax, (v) => s.limit ? `${bytes(v)} of ${bytes(s.limit)}` : `${bytes(v)} (no limit)`,
        s.limit ? [{ value: s.limit, cls: 'limit', title: 'limit' }] : []));
  });
  box.replaceChildren(...charts);
}

// pollUsage samples the instance's usage every few seconds while the page is in view.
async function pollUsage(base, box, problem, signal) {
  const series = {};
  let prev = null;
  while (!signal.aborted) {
    if (document.visibilityState === 'visible') {
      try {
        const cur = await get(base + '/usage', { signal });
        addSample(series, prev, cur);
        prev = cur;
        problem.replaceChildren();
        drawUsage(box, series);
      } catch (err) {
        if (signal.aborted) return;
        problem.replaceChildren(errorBox(err));
      }
    } else {
      prev = null; // a gap in view is not a rate
    }
    await sleep(pollMs, signal);
  }
}

export async function instancePage({ main, args, signal, rights }) {
  const [ns, name] = args;
  const base = `/v1/namespaces/${encodeURIComponent(ns)}/taskgroups/${encodeURIComponent(name)}`;
  const tgPath = `${encodeURIComponent(ns)}/${encodeURIComponent(name)}`;
  const logs = rights.need(link(`#/logs/${tgPath}`, 'Logs'), 'logs', 'taskgroup', ns);
  const exec = rights.need(link(`#/exec/${tgPath}`, 'Exec'), 'exec', 'taskgroup', ns);
  logs.id = 'logs';
  exec.id = 'exec';
  const summary = h('div', { class: 'card', id: 'summary' });
  const problem = h('div');
  const usage = h('div', { id: 'usage', class: 'usage' }, h('p', { class: 'muted' }, 'Measuring…'));
  const usageProblem = h('div', { id: 'usage-problem' });
  const tasks = h('tbody', { id: 'tasks' });
  const portRows = h('tbody', { id: 'ports' });
  const envRows = h('tbody', { id: 'env' });
  const spec = specPane('spec');
  const head = (cols) => h('thead', {}, h('tr', {}, cols.map((x) => h('th', {}, x))));
  main.append(h('h1', {}, `Instance ${ns}/${name}`), summary, h('div', { class: 'toolbar actions' }, logs, exec), problem,
    h('h2', {}, 'Usage'), usageProblem, usage,
    h('h2', {}, 'Tasks'), h('table', {}, head(['Task', 'State', 'Exit code', 'Reason', 'Started', 'Restarts', 'GPUs']), tasks),
    h('h2', {}, 'Ports'), h('table', {}, head(['Task', 'Name', 'Container port', 'Host port', 'Protocol']), portRows),
    h('h2', {}, 'Environment'), h('table', {}, head(['Task', 'Name', 'Value']), envRows),
    h('h2', {}, 'Spec ', spec.toggle), spec.pre);

  // The owner says why an instance waits (the scheduler's reason, a node held for it):
  // read while the instance is not Running.
  // A later change drawn first is not overwritten by an earlier one whose owner came late.
  let shown = 0;
  const show = async (tg) => {
    const seq = ++shown;
    const o = tg.spec.owner || {};
    let owner = null;
    if ((tg.status || {}).phase !== 'Running' && ownerPlural[o.kind]) {
      owner = await get(objectPath(ownerPlural[o.kind], ns, o.name), { signal }).catch(() => null);
    }
    if (seq !== shown) return;
    summary.replaceChildren(summaryOf(tg, owner));
    tasks.replaceChildren(...taskRows(tg));
    portRows.replaceChildren(...portTable(tg));
    envRows.replaceChildren(...envTable(tg));
    spec.show(tg.spec);
  };
  let first = await get(base, { signal }); // a missing instance fails the page at once
  pollUsage(base, usage, usageProblem, signal);

  keepWatching(signal, async () => {
    const tg = first || await get(base, { signal });
    const painting = first !== null;
    first = null;
    await show(tg);
    if (painting) performance.mark('berth:page-painted');
    await watch(objectPath('taskgroups', ns) + query({ watch: 'true', name, resourceVersion: tg.metadata.resourceVersion }), (ev) => {
      if (!ev.object) return;
      if (ev.type === 'DELETED') {
        summary.prepend(h('p', { class: 'error' }, 'This instance was deleted.'));
        return;
      }
      show(ev.object);
    }, signal);
  }, (err) => problem.replaceChildren(errorBox(err)));
}
