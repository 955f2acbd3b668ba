// The graph the workflow page draws, from a workflow and its node statuses: a pure
// function, no DOM. Node statuses link each node to its children (a DAG to its tasks, a
// steps template to its groups, a group to its steps, a loop to its items, a retry to
// its attempts); the order between a DAG's tasks comes from the template's dependencies,
// and a steps template's groups run one after another. Children beyond a bound are
// collapsed into one "more" node that says how many and in which phases.

export const childBound = 20;

// dependsNames are the task names a depends expression mentions ("A && (B.Failed || C)").
export function dependsNames(expr) {
  return [...new Set((expr || '').match(/[A-Za-z_][A-Za-z0-9_-]*(?=\.|\s|\)|&|\||$)/g) || [])]
    .filter((w) => !['true', 'false'].includes(w));
}

// taskDeps maps a dag template's task names to the names they depend on.
function taskDeps(tmpl) {
  const deps = new Map();
  const tasks = ((tmpl || {}).dag || {}).tasks || [];
  const names = new Set(tasks.map((t) => t.name));
  for (const t of tasks) {
    const d = [...(t.dependencies || []), ...dependsNames(t.depends)].filter((n) => names.has(n) && n !== t.name);
    deps.set(t.name, [...new Set(d)]);
  }
  return deps;
}

const quiet = new Set(['Succeeded', 'Skipped', 'Omitted']);

// shownChildren keeps at most bound children: those not done well first, in order.
function shownChildren(kids, byId, bound) {
  if (kids.length <= bound) return { shown: kids, hidden: [] };
  const keep = new Set();
  for (const pass of [false, true]) {
    for (const c of kids) if (keep.size < bound && quiet.has((byId.get(c) || {}).phase) === pass) keep.add(c);
  }
  return { shown: kids.filter((c) => keep.has(c)), hidden: kids.filter((c) => !keep.has(c)) };
}

// graphOf answers { nodes: [{id, label, phase, type, more?}], edges: [[from, to]],
// collapsed: [{parent, count, phases}] }. opts: bound (children drawn under one node),
// expanded (a Set of node IDs whose children are all drawn).
export function graphOf(wf, statuses, opts = {}) {
  const bound = opts.bound ?? childBound;
  const expanded = opts.expanded || new Set();
  const byId = new Map(statuses.map((n) => [n.id, n]));
  const byName = new Map(statuses.map((n) => [n.name, n]));
  const templates = new Map((((wf || {}).spec || {}).templates || []).map((t) => [t.name, t]));
  const childOf = new Set(statuses.flatMap((n) => (n.children || []).filter((c) => c !== n.id && byId.has(c))));
  const roots = statuses.filter((n) => !childOf.has(n.id)).map((n) => n.id).sort((a, b) =>
    String((byId.get(a).startedAt || '~')).localeCompare(String(byId.get(b).startedAt || '~')) || a.localeCompare(b));
  const nodes = [];
  const edges = [];
  const collapsed = [];
  const seen = new Set();
  const stack = [...roots].reverse();
  while (stack.length) {
    const id = stack.pop();
    if (seen.has(id)) continue;
    seen.add(id);
    const n = byId.get(id);
    nodes.push({ id, label: n.displayName || n.name, phase: n.phase || 'Pending', type: n.type });
    const kids = (n.children || []).filter((c) => byId.has(c) && c !== id);
    const { shown, hidden } = expanded.has(id) ? { shown: kids, hidden: [] } : shownChildren(kids, byId, bound);
    linkChildren(n, shown, { byId, byName, templates, edges });
    if (hidden.length) {
      const phases = {};
      for (const c of hidden) phases[byId.get(c).phase || 'Pending'] = (phases[byId.get(c).phase || 'Pending'] || 0) + 1;
      const more = `${id}/more`;
      nodes.push({ id: more, label: `+${hidden.length} more`, phase: 'more', type: 'more', more: id });
      edges.push([id, more]);
      collapsed.push({ parent: id, count: hidden.length, phases });
    }
    for (let i = shown.length - 1; i >= 0; i--) stack.push(shown[i]);
  }
  return { nodes, edges, collapsed };
}

// linkChildren adds the edges from n to the children drawn: a DAG's tasks by their
// dependencies (tasks that depend on none hang under the DAG), a steps template's groups
// in a chain through their steps, any other node's children under it.
function linkChildren(n, shown, { byId, byName, templates, edges }) {
  if (n.type === 'DAG' && templates.has(n.templateName)) {
    const deps = taskDeps(templates.get(n.templateName));
    const drawn = new Set(shown);
    for (const c of shown) {
      const task = byId.get(c).name.slice(n.name.length + 1);
      const from = (deps.get(task) || []).map((d) => byName.get(`${n.name}.${d}`)).filter((d) => d && drawn.has(d.id));
      if (from.length) for (const d of from) edges.push([d.id, c]);
      else edges.push([n.id, c]);
    }
    return;
  }
  if (n.type === 'Steps') {
    let prev = [n.id];
    for (const g of shown) {
      for (const p of prev) edges.push([p, g]);
      const steps = (byId.get(g).children || []).filter((c) => byId.has(c));
      prev = steps.length ? steps : [g];
    }
    return;
  }
  for (const c of shown) edges.push([n.id, c]);
}
