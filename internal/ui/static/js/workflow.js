// One workflow: its phase and controls, and its nodes drawn as a graph in SVG (wfgraph.js
// builds it, layout.js places it), coloured by phase and read again every few seconds
// (longer for big workflows); a click on a node shows its inputs, outputs, artifacts to
// download and its log. Loops and retries of more than a bound of children are drawn
// collapsed, with a notice that says so and a button that draws them all.
// An archived workflow (#/wf/NS/NAME?archived=1&uid=UID, wfarchive.js) is drawn the same
// from its archive entry's nodes, once (it no longer changes), with when it was archived
// and its own actions: Retry (a failed one), Resubmit, Delete. A stored workflow that is
// not found is looked for in the archive: an old link leads to where it went.
import { APIError, call, get, query, token } from './api.js';
import { h, age, errorBox, link } from './dom.js';
import { sleep } from './live.js';
import { layout, defaults } from './layout.js';
import { graphOf } from './wfgraph.js';
import { phaseBadge, duration } from './batch.js';
import { archivePath, archivedActions, archivedHref, archivedWords, artifactPath, nodeList } from './wfarchive.js';

const svgNS = 'http://www.w3.org/2000/svg';
const nodePage = 5000; // the nodes route's largest page
const maxPages = 40; // 200,000 nodes: more are not read
const logBytes = 64 << 10; // the end of a log shown in the page

function svg(tag, attrs, text) {
  const el = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  return el;
}

const base = (ns, name) => `/v1/namespaces/${encodeURIComponent(ns)}/workflows/${encodeURIComponent(name)}`;

// readNodes reads every node a page at a time; a server without the route (404) has them
// in the object.
async function readNodes(ns, name, wf, signal) {
  const out = [];
  let cont = '';
  for (let i = 0; i < maxPages; i++) {
    let page;
    try {
      page = await get(base(ns, name) + '/nodes' + query({ limit: nodePage, continue: cont }), { signal });
    } catch (err) {
      if (err instanceof APIError && err.status === 404 && i === 0) {
        return Object.entries((wf.status || {}).nodes || {}).map(([id, n]) => ({ id, ...n }));
      }
      throw err;
    }
    out.push(...(page.items || []));
    if (!page.continue) return out;
    cont = page.continue;
  }
  return out;
}

// save downloads an artifact with the token (a link cannot carry it) and saves it.
async function save(path, filename, problem) {
  try {
    const resp = await fetch(path, { headers: { Authorization: 'Bearer ' + token() } });
    if (!resp.ok) throw new APIError(resp.status, `${filename}: ${resp.status} ${resp.statusText}`);
    const url = URL.createObjectURL(await resp.blob());
    const a = h('a', { href: url, download: filename });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (err) {
    problem.replaceChildren(errorBox(err));
  }
}

const finished = (n) => ['Succeeded', 'Failed', 'Error'].includes(n.phase);

// tail reads the end of a log: the stored main-logs of a finished step (of the archived
// workflow src.uid names, if it does), the task group's log of a running one.
async function tail({ ns, name, uid }, n, signal) {
  const path = finished(n) ? artifactPath(ns, name, n.id, 'main-logs', uid)
    : `/v1/namespaces/${encodeURIComponent(ns)}/taskgroups/${encodeURIComponent(n.taskgroup)}/logs?tail=200`;
  const text = String(await get(path, { signal }));
  return text.length > logBytes ? '…' + text.slice(-logBytes) : text;
}

function paramRows(title, params) {
  if (!params || !params.length) return '';
  return [h('h3', {}, title), h('table', { class: 'params' }, h('tbody', {}, params.map((p) =>
    h('tr', {}, h('td', {}, p.name), h('td', {}, h('code', {}, p.value ?? p.default ?? '')))))) ];
}

// detail is the panel of one node of workflow src ({ns, name}, and uid for an archived
// one: its steps' task groups are gone, their logs and outputs stored).
function detail(src, n, problem, signal) {
  const { ns, uid } = src;
  const logs = h('pre', { class: 'log', id: 'node-log' });
  const arts = [...((n.inputs || {}).artifacts || []).map((a) => ['input', a]), ...((n.outputs || {}).artifacts || []).map((a) => ['output', a])];
  const out = n.outputs || {};
  const panel = h('div', { class: 'card', id: 'node-detail', dataset: { id: n.id } },
    h('h2', {}, n.displayName || n.name, ' ', phaseBadge(n.phase)),
    h('dl', { class: 'kv' }, [['Name', n.name], ['Type', n.type], ['Template', n.templateName], ['Started', n.startedAt ? `${age(n.startedAt)} ago` : ''],
      ['Duration', duration(n.startedAt, n.finishedAt)], ['Message', n.message], ['Exit code', out.exitCode ?? ''],
      // An archived workflow's task groups are gone: their names are no links.
      ['Task group', n.taskgroup && !uid ? link(`#/taskgroup/${encodeURIComponent(ns)}/${encodeURIComponent(n.taskgroup)}`, n.taskgroup) : n.taskgroup || '']]
      .filter(([, v]) => v !== '' && v !== undefined).flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
    paramRows('Inputs', (n.inputs || {}).parameters), paramRows('Outputs', out.parameters),
    out.result !== undefined ? [h('h3', {}, 'Result'), h('pre', {}, out.result)] : '',
    arts.length ? [h('h3', {}, 'Artifacts'), h('ul', { id: 'node-artifacts' }, arts.map(([dir, a]) => h('li', {}, `${dir} ${a.name} `,
      dir === 'output' ? h('button', { type: 'button', class: 'download', dataset: { artifact: a.name },
        onclick: () => save(artifactPath(ns, src.name, n.id, a.name, uid), `${n.displayName || n.id}-${a.name}.tgz`, problem) }, 'Download') : '')))] : '',
    n.type === 'Pod' ? [h('h3', {}, 'Log'), !uid && n.taskgroup && !finished(n)
      ? link(`#/logs/${encodeURIComponent(ns)}/${encodeURIComponent(n.taskgroup)}`, 'follow the log') : '', logs] : '');
  if (n.type === 'Pod' && (uid ? finished(n) : n.taskgroup || n.finishedAt)) {
    logs.textContent = 'reading…';
    tail(src, n, signal).then((t) => { logs.textContent = t || '(empty)'; })
      .catch((err) => { logs.textContent = `no log: ${err.message}`; });
  }
  return panel;
}

// draw builds the SVG of a laid out graph: a group per node (data-id, data-phase) with
// its box and label, edges as paths under them.
function draw(g, l, onPick) {
  const pad = 8;
  const box = svg('svg', { id: 'dag', width: l.width + 2 * pad, height: l.height + 2 * pad, role: 'img', 'aria-label': 'workflow graph' });
  const edges = svg('g', { class: 'edges', transform: `translate(${pad},${pad})` });
  for (const e of l.edges) edges.append(svg('path', { d: e.d, class: 'edge', 'data-from': e.from, 'data-to': e.to }));
  const nodes = svg('g', { class: 'nodes', transform: `translate(${pad},${pad})` });
  const els = new Map();
  for (const n of g.nodes) {
    const p = l.nodes.get(n.id);
    const el = svg('g', { class: `node ${n.type === 'more' ? 'more' : ''}`, 'data-id': n.id, 'data-phase': n.phase, 'data-type': n.type,
      transform: `translate(${p.x},${p.y})`, tabindex: 0 });
    el.append(svg('rect', { width: defaults.width, height: defaults.height, rx: 6 }));
    const label = n.label.length > 22 ? n.label.slice(0, 21) + '…' : n.label;
    el.append(svg('text', { x: 10, y: defaults.height / 2 + 4 }, label));
    el.append(svg('title', {}, `${n.label}: ${n.phase}`));
    el.addEventListener('click', () => onPick(n));
    el.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') onPick(n); });
    els.set(n.id, el);
    nodes.append(el);
  }
  box.append(edges, nodes);
  const root = g.nodes.length ? l.nodes.get(g.nodes[0].id) : { x: 0 };
  return { box, els, rootX: root.x + pad + defaults.width / 2 };
}

// frame lays out a workflow's page with its action buttons: its summary, problems,
// collapsed loops' notices, and the graph beside the node panel.
function frame(main, ns, name, actions) {
  const f = {
    head: h('div', { class: 'toolbar', id: 'wf-summary' }),
    problem: h('div'),
    notice: h('div', { id: 'wf-collapsed' }),
    pane: h('div', { class: 'dag-pane', id: 'dag-pane' }),
    side: h('div', { class: 'dag-side' }, h('p', { class: 'muted' }, 'Click a node for its inputs, outputs, artifacts and log.')),
  };
  main.append(h('h1', {}, `Workflow ${ns}/${name}`), f.head, h('div', { class: 'toolbar' }, actions, link(`#/workflows?ns=${encodeURIComponent(ns)}`, 'all workflows')),
    f.problem, f.notice, h('div', { class: 'dag-view' }, f.pane, f.side));
  return f;
}

// graphView draws workflow src's graph into a frame: show(wf, nodes) draws it again
// when its shape changed, else only the phases; the summary ends with extra.
function graphView({ main, src, signal, extra }, { head, problem, notice, pane, side }) {
  const expanded = new Set();
  let picked = '';
  let pickedPhase = '';
  let shape = '';
  let scrolled = false;
  let els = new Map();
  let last = { wf: null, nodes: [] };
  const pick = (n) => {
    if (n.type === 'more') { expanded.add(n.more); render(); return; }
    picked = n.id;
    const full = last.nodes.find((x) => x.id === n.id);
    pickedPhase = full ? full.phase : '';
    if (full) side.replaceChildren(detail(src, full, problem, signal));
    for (const [id, el] of els) el.classList.toggle('picked', id === picked);
  };
  const render = () => {
    const { wf, nodes } = last;
    const st = wf.status || {};
    const pods = nodes.filter((n) => n.type === 'Pod');
    const done = pods.filter((n) => ['Succeeded', 'Failed', 'Error', 'Skipped', 'Omitted'].includes(n.phase)).length;
    head.replaceChildren(phaseBadge(st.phase), h('span', { id: 'wf-progress' }, `${done}/${pods.length}`),
      st.startedAt ? h('span', { class: 'muted' }, `started ${age(st.startedAt)} ago, ran ${duration(st.startedAt, st.finishedAt)}`) : '',
      st.message ? h('span', { class: 'message' }, st.message) : '', extra || '');
    const g = graphOf(wf, nodes, { expanded });
    notice.replaceChildren(...g.collapsed.map((c) => h('div', { class: 'notice' },
      `${(nodes.find((n) => n.id === c.parent) || {}).displayName || c.parent}: ${c.count} more children not drawn (`,
      Object.entries(c.phases).map(([p, k]) => `${k} ${p}`).join(', '), '). ',
      h('button', { type: 'button', class: 'expand', onclick: () => { expanded.add(c.parent); render(); } }, 'Draw them all'))));
    const next = g.nodes.map((n) => n.id).join(',') + '|' + g.edges.map((e) => e.join('>')).join(',');
    if (next !== shape) {
      shape = next;
      const drawn = draw(g, layout(g.nodes.map((n) => n.id), g.edges), pick);
      els = drawn.els;
      pane.replaceChildren(drawn.box);
      // The first drawing shows the graph's top: the root sits centred over the widest layer.
      if (!scrolled && g.nodes.length) {
        scrolled = true;
        pane.scrollLeft = Math.max(0, drawn.rootX - pane.clientWidth / 2);
      }
    }
    for (const n of g.nodes) {
      const el = els.get(n.id);
      if (el && el.getAttribute('data-phase') !== n.phase) {
        el.setAttribute('data-phase', n.phase);
        el.querySelector('title').textContent = `${n.label}: ${n.phase}`;
      }
      if (el) el.classList.toggle('picked', n.id === picked);
      // The panel of the node picked follows its phase (its outputs, its stored log).
      if (n.id === picked && n.phase !== pickedPhase) pick(n);
    }
    main.dataset.painted = 'workflow';
  };
  return (wf, nodes) => {
    last = { wf, nodes };
    render();
  };
}

const title = (a) => a[0].toUpperCase() + a.slice(1);

// archivedInstead opens the page of the archived workflow ns/name (the one archived
// last) in place of the stored one's, answering whether there is one.
async function archivedInstead(ns, name, signal) {
  try {
    const e = await get(archivePath(ns, name), { signal });
    location.replace(archivedHref(ns, name, ((e.workflow || {}).status || {}).uid));
    return true;
  } catch {
    return false; // none (or no archive): the stored workflow's 404 says it
  }
}

// archivedPage is an archived workflow's page: its graph from the entry's nodes, drawn
// once, and its actions on the archive's routes.
async function archivedPage({ main, args, params, signal, rights }) {
  const [ns, name] = args;
  const entry = await get(archivePath(ns, name, { uid: params.get('uid') || '' }), { signal });
  const wf = entry.workflow || {};
  const st = wf.status || {};
  const src = { ns, name, uid: st.uid || params.get('uid') || '' };
  const words = archivedWords(entry);
  const stamp = h('span', { class: 'badge archived', id: 'wf-archived', title: words.title }, words.text);
  const actions = archivedActions(st.phase).map((a) => rights.need(h('button', { type: 'button',
    class: a === 'delete' ? 'wf-action danger' : 'wf-action', dataset: { action: a } }, title(a)), 'write', 'workflow', ns));
  const f = frame(main, ns, name, actions);
  for (const b of actions) {
    const a = b.dataset.action;
    b.addEventListener('click', async () => {
      if (a === 'delete' && !confirm(`Delete the archived workflow ${ns}/${name} and its steps' logs and artifacts?`)) return;
      b.disabled = true;
      try {
        const out = a === 'delete' ? await call('DELETE', archivePath(ns, name, { uid: src.uid }))
          : await call('POST', archivePath(ns, name, { uid: src.uid, sub: `/actions/${a}` }));
        // Retried, it is the stored workflow of its name again; resubmitted, a new one.
        location.hash = a === 'delete' ? `#/workflows?ns=${encodeURIComponent(ns)}`
          : `#/wf/${encodeURIComponent(ns)}/${encodeURIComponent(out.metadata.name)}`;
      } catch (err) {
        f.problem.replaceChildren(errorBox(err));
      } finally {
        b.disabled = false;
      }
    });
  }
  graphView({ main, src, signal, extra: stamp }, f)(wf, nodeList(wf));
}

export async function workflowPage(ctx) {
  const { main, args, params, signal, rights } = ctx;
  if (params.get('archived') === '1') return archivedPage(ctx);
  const [ns, name] = args;
  const actions = ['suspend', 'resume', 'stop', 'terminate', 'retry', 'resubmit'].map((a) =>
    rights.need(h('button', { type: 'button', class: 'wf-action', dataset: { action: a } }, title(a)), 'write', 'workflow', ns));
  const f = frame(main, ns, name, actions);
  const { problem } = f;
  for (const b of actions) {
    b.addEventListener('click', async () => {
      b.disabled = true;
      try {
        const wf = await call('POST', `${base(ns, name)}/actions/${b.dataset.action}`);
        if (b.dataset.action === 'resubmit') location.hash = `#/wf/${encodeURIComponent(ns)}/${encodeURIComponent(wf.metadata.name)}`;
      } catch (err) {
        problem.replaceChildren(errorBox(err));
      } finally {
        b.disabled = false;
      }
    });
  }
  const show = graphView({ main, src: { ns, name }, signal }, f);
  let failures = 0;
  let count = 0;
  while (!signal.aborted) {
    try {
      const wf = await get(base(ns, name), { signal });
      const nodes = await readNodes(ns, name, wf, signal);
      count = nodes.length;
      failures = 0;
      problem.replaceChildren();
      show(wf, nodes);
      if (['Succeeded', 'Failed', 'Error'].includes((wf.status || {}).phase)) {
        // A finished workflow changes only by an action: read it less often.
        await sleep(10000, signal);
        continue;
      }
    } catch (err) {
      if (signal.aborted || err.name === 'AbortError') return;
      // Not stored: archived since (or long ago, and the link is old)?
      if (err instanceof APIError && err.status === 404 && await archivedInstead(ns, name, signal)) return;
      if (++failures >= 2 || err instanceof APIError) problem.replaceChildren(errorBox(err));
      if (err instanceof APIError && err.status === 404) return;
    }
    // Two seconds, longer for big workflows: a read of 20,000 nodes is not made every 2 s.
    await sleep(Math.min(15000, 2000 + count), signal);
  }
}
