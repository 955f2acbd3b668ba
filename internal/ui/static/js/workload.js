// One workload: its status, controls, instances (live), why instances wait, its
// definition and its events.
import { call, get, watch, objectPath, query, workloadKinds } from './api.js';
import { h, badge, age, link, errorBox, clear, specPane } from './dom.js';
import { keepWatching } from './live.js';
import { instances } from './workloads.js';
import { stateLine, message } from './status.js';
import { priorityText, tierText } from './policyview.js';

// instanceOwner is the owner of the task groups shown: the workload itself, or for a
// deployment the application of its current revision.
function instanceOwner(obj) {
  if (obj.kind === 'deployment') {
    const rev = (obj.status || {}).revision;
    return rev ? `application/${obj.metadata.name}-v${rev}` : '';
  }
  return `${obj.kind}/${obj.metadata.name}`;
}

// current is the workload as stored, without what berth writes (its status, revision and
// creation time): what the definition pane shows and what a plan is asked about.
function current(obj) {
  const c = structuredClone(obj);
  delete c.status;
  delete c.metadata.resourceVersion;
  delete c.metadata.creationTimestamp;
  return JSON.stringify(c, null, 2);
}

// instanceHref is the route of a task group's own page (instance.js, loaded when opened).
export function instanceHref(ns, name) { return `#/taskgroup/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`; }

function lastExit(tg) {
  const tasks = (tg.status || {}).tasks || [];
  const ended = tasks.filter((t) => t.info && t.info.FinishAt);
  if (!ended.length) return '';
  const t = ended[ended.length - 1];
  return `${t.name}: exit ${t.info.ExitCode}${t.message ? ' (' + t.message + ')' : ''}`;
}

// scaleControl is the instance count and its Scale button. The box follows the workload
// as it changes (a scale from the CLI, an autoscaler), unless the user is editing it:
// focused, or holding a number they typed and have not sent. A scale sent, or Escape,
// hands it back to the workload's own count.
function scaleControl(obj, path, problem) {
  const wanted = (o) => String((o.spec || {}).instance ?? 0);
  const input = h('input', { id: 'scale-to', type: 'number', min: 0, value: wanted(obj), style: 'width:5rem' });
  let typed = false;
  let live = obj;
  input.addEventListener('input', () => { typed = input.value !== wanted(live); });
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') { typed = false; input.value = wanted(live); input.blur(); }
  });
  const button = h('button', { type: 'button', id: 'scale', class: 'primary' }, 'Scale');
  button.addEventListener('click', () => act(button, async () => {
    await call('POST', path + '/scale', { instances: Number(input.value) }, { idempotent: true });
    typed = false;
  }, problem));
  const follow = (o) => {
    live = o;
    if (!typed && document.activeElement !== input) input.value = wanted(o);
    else if (input.value === wanted(o)) typed = false;
  };
  input.addEventListener('blur', () => follow(live));
  return { el: h('span', { class: 'scale' }, h('label', {}, 'Instances', input), button), follow };
}

function health(tg) {
  const st = tg.status || {};
  if (st.healthy === true) return h('span', { class: 'badge ok' }, 'healthy');
  if (st.healthy === false) return h('span', { class: 'badge bad' }, 'unhealthy');
  return '';
}

async function act(button, fn, problem) {
  button.disabled = true;
  problem.replaceChildren();
  try {
    await fn();
  } catch (err) {
    problem.replaceChildren(errorBox(err));
  } finally {
    button.disabled = false;
  }
}

// instanceRow is one task group's row; its controls show as the token allows (logs,
// exec for the terminal and the restart command, write for a move).
function instanceRow(ns, tg, problem, rights) {
  const m = tg.metadata;
  const st = tg.status || {};
  const base = `/v1/namespaces/${encodeURIComponent(ns)}/taskgroups/${encodeURIComponent(m.name)}`;
  const restart = rights.need(h('button', { type: 'button', class: 'restart', title: 'run the restart command of every task (reloadCmd/restartCmd)' }, 'Restart'), 'exec', 'taskgroup', ns);
  restart.addEventListener('click', () => act(restart, () => call('POST', base + '/actions/restart'), problem));
  const move = rights.need(h('button', { type: 'button', class: 'move', title: 'replace this instance on another node' }, 'Move'), 'write', 'taskgroup', ns);
  move.addEventListener('click', () => act(move, () => call('POST', base + '/move', {}), problem));
  const tgPath = `${encodeURIComponent(ns)}/${encodeURIComponent(m.name)}`;
  const logs = rights.need(link(`#/logs/${tgPath}`, 'Logs'), 'logs', 'taskgroup', ns);
  const exec = rights.need(link(`#/exec/${tgPath}`, 'Exec'), 'exec', 'taskgroup', ns);
  return h('tr', { dataset: { key: m.name } },
    h('td', {}, String(tg.spec.index)),
    h('td', {}, link(instanceHref(ns, m.name), m.name)),
    h('td', {}, tg.spec.node || h('span', { class: 'muted' }, 'not placed')),
    h('td', {}, badge(st.phase), st.message ? h('div', { class: 'muted' }, st.message) : ''),
    h('td', {}, health(tg)),
    h('td', {}, String(tg.spec.reschedTimes || 0)),
    h('td', {}, lastExit(tg)),
    h('td', { class: 'actions' }, logs, exec, restart, move));
}

export async function workloadPage({ main, args, signal, rights }) {
  const [plural, ns, name] = args;
  if (!workloadKinds[plural]) throw new Error(`${plural} is not a kind of workload`);
  const path = objectPath(plural, ns, name);
  const title = h('h1', {}, `${workloadKinds[plural]} ${ns}/${name}`);
  const summary = h('div', { class: 'card', id: 'summary' });
  const controls = h('div', { class: 'toolbar', id: 'controls' });
  const problem = h('div');
  const pending = h('div', { id: 'pending' });
  const rows = h('tbody', { id: 'instances' });
  const definition = specPane('definition');
  const events = h('tbody', { id: 'events' });
  main.append(title, summary, controls, problem, pending,
    h('h2', {}, 'Instances'),
    h('table', {}, h('thead', {}, h('tr', {}, ['#', 'Task group', 'Node', 'Phase', 'Health', 'Restarts', 'Last exit', ''].map((x) => h('th', {}, x)))), rows),
    h('h2', {}, 'Events'),
    h('table', {}, h('thead', {}, h('tr', {}, ['Last seen', 'Type', 'Reason', 'Message', 'Count'].map((x) => h('th', {}, x)))), events),
    h('h2', {}, 'Spec ', definition.toggle), definition.pre);

  let obj = await get(path, { signal });
  const kind = workloadKinds[plural];
  const scaleBox = scaleControl(obj, path, problem);
  if (plural !== 'daemonsets') controls.append(rights.need(scaleBox.el, 'scale', kind, ns));
  if (plural === 'deployments') {
    for (const action of ['pause', 'resume', 'undo']) {
      const b = rights.need(h('button', { type: 'button', id: action }, action[0].toUpperCase() + action.slice(1)), 'write', kind, ns);
      // Pausing or resuming twice is the same; an undo is not.
      b.addEventListener('click', () => act(b, () => call('POST', `${path}/rollout/${action}`, undefined, { idempotent: action !== 'undo' }), problem));
      controls.append(b);
    }
  }
  const remove = rights.need(h('button', { type: 'button', id: 'delete', class: 'danger' }, 'Delete'), 'write', kind, ns);
  remove.addEventListener('click', () => {
    if (confirm(`Delete ${kind} ${ns}/${name} and stop its instances?`)) act(remove, () => call('DELETE', path), problem);
  });
  controls.append(remove);

  const showSummary = () => {
    const st = obj.status || {};
    const msg = message(obj);
    clear(summary).append(h('dl', { class: 'kv' },
      h('dt', {}, 'Phase'), h('dd', { id: 'phase' }, stateLine(obj)),
      h('dt', {}, 'Instances'), h('dd', { id: 'instance-count' }, instances(obj)),
      msg ? [h('dt', {}, 'Message'), h('dd', { id: 'message' }, msg)] : '',
      h('dt', {}, 'Created'), h('dd', {}, `${age(obj.metadata.creationTimestamp)} ago`),
      h('dt', {}, 'Tier'), h('dd', { id: 'tier' }, tierText(obj.spec)),
      h('dt', {}, 'Priority'), h('dd', { id: 'priority' }, priorityText(obj.spec) || h('span', { class: 'muted' }, '0 (no class)')),
      plural === 'deployments' ? [h('dt', {}, 'Revision'), h('dd', {}, `${st.revision || ''}${st.paused ? ' (paused)' : ''}`)] : ''));
    definition.show(JSON.parse(current(obj)));
    scaleBox.follow(obj);
  };
  showSummary();

  // Why instances wait: the scheduler's answer for this workload's missing instances.
  let planned = '';
  const explain = async () => {
    const st = obj.status || {};
    const key = `${obj.metadata.resourceVersion}`;
    if (!st.pending) { pending.replaceChildren(); planned = ''; return; }
    if (planned === key) return;
    planned = key;
    try {
      const plan = await call('POST', '/v1/plan', current(obj), { signal, idempotent: true }); // a plan writes nothing
      const r = (plan.results || [])[0];
      if (r && r.unplaced && r.unplaced.length) {
        const which = r.unplaced.length === 1 ? `Instance ${r.unplaced[0]} is` : `Instances ${r.unplaced.join(', ')} are`;
        pending.replaceChildren(h('div', { class: 'reason', id: 'pending-reason' },
          h('strong', {}, `${which} pending: `), r.message || ''));
      } else {
        pending.replaceChildren(h('div', { class: 'reason', id: 'pending-reason' }, st.message));
      }
    } catch (err) {
      pending.replaceChildren(h('div', { class: 'reason', id: 'pending-reason' }, st.message), errorBox(err));
    }
  };
  explain();

  // The workload itself, live.
  keepWatching(signal, async () => {
    obj = await get(path, { signal });
    showSummary();
    explain();
    await watch(objectPath(plural, ns) + query({ watch: 'true', name, resourceVersion: obj.metadata.resourceVersion }), (ev) => {
      if (!ev.object) return;
      if (ev.type === 'DELETED') {
        summary.prepend(h('p', { class: 'error' }, 'This workload was deleted.'));
        return;
      }
      obj = ev.object;
      showSummary();
      explain();
    }, signal);
  }, (err) => problem.replaceChildren(errorBox(err)));

  // Its instances, live: the task groups it owns, filtered on the server.
  const tgPath = objectPath('taskgroups', ns);
  keepWatching(signal, async () => {
    const owner = instanceOwner(obj);
    if (!owner) { rows.replaceChildren(); return; }
    const list = await get(tgPath + query({ owner, limit: 500 }), { signal });
    const order = (a, b) => a.spec.index - b.spec.index || a.metadata.name.localeCompare(b.metadata.name);
    const byName = new Map(list.items.map((tg) => [tg.metadata.name, tg]));
    const empty = () => {
      if (!byName.size) rows.replaceChildren(h('tr', {}, h('td', { colspan: 8, class: 'muted' }, 'No instances.')));
    };
    rows.replaceChildren(...[...byName.values()].sort(order).map((tg) => instanceRow(ns, tg, problem, rights)));
    empty();
    // A change replaces its own row only: the others stay, and a click on them lands.
    await watch(tgPath + query({ watch: 'true', owner, resourceVersion: list.resourceVersion }), (ev) => {
      if (!ev.object) return;
      const name = ev.object.metadata.name;
      const tr = rows.querySelector(`tr[data-key="${CSS.escape(name)}"]`);
      if (ev.type === 'DELETED') {
        byName.delete(name);
        if (tr) tr.remove();
        empty();
        return;
      }
      byName.set(name, ev.object);
      const next = instanceRow(ns, ev.object, problem, rights);
      if (tr) {
        tr.replaceWith(next);
        return;
      }
      rows.querySelector('tr:not([data-key])')?.remove();
      const after = [...rows.querySelectorAll('tr[data-key]')].find((r) => order(byName.get(r.dataset.key), ev.object) > 0);
      rows.insertBefore(next, after || null);
    }, signal);
  }, (err) => problem.replaceChildren(errorBox(err)));

  // Its events: the last ones, then new ones as they are recorded.
  const eventRow = (e) => h('tr', {},
    h('td', { title: e.lastTime || e.time }, age(e.lastTime || e.time)),
    h('td', {}, e.type), h('td', {}, e.reason), h('td', {}, e.message), h('td', {}, String(e.count || 1)));
  const eventQuery = { namespace: ns, kind: workloadKinds[plural], name };
  keepWatching(signal, async () => {
    const list = await get('/v1/events' + query({ ...eventQuery, limit: 500 }), { signal });
    const items = list.items.slice(-50).reverse();
    events.replaceChildren(...items.map(eventRow));
    await watch('/v1/events' + query({ ...eventQuery, watch: 'true' }), (ev) => {
      if (ev.type === 'ERROR') return;
      const e = ev.object || ev;
      events.prepend(eventRow(e));
      while (events.children.length > 50) events.lastChild.remove();
    }, signal);
  }, (err) => problem.replaceChildren(errorBox(err)));
}
