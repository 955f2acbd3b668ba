// What an instance's page computes from the task group and from usage samples
// (GET .../taskgroups/NAME/usage): pure functions, no page, so node's test runner checks
// them (internal/ui/testdata).

// keepPoints is how many samples a graph keeps: a few minutes at the page's poll.
export const keepPoints = 60;

// cores turns two samples of one task's CPU counter into the cores it used between them;
// null when they do not make a rate (a task restarted, its counter went back, or either
// sample failed).
export function cores(prev, cur, seconds) {
  if (!prev || !cur || prev.error || cur.error || !(seconds > 0)) return null;
  const used = cur.cpuSeconds - prev.cpuSeconds;
  return used < 0 ? null : used / seconds;
}

// series adds a sample to the per-task series: { task: { cpu: [[t, cores]], mem: [[t,
// bytes]], limit } }, keeping the last keepPoints of each. prev is the sample before.
export function addSample(series, prev, cur) {
  const t = new Date(cur.time).getTime();
  const seconds = prev ? (t - new Date(prev.time).getTime()) / 1000 : 0;
  const before = new Map(((prev || {}).tasks || []).map((x) => [x.name, x]));
  for (const task of cur.tasks || []) {
    const s = series[task.name] || (series[task.name] = { cpu: [], mem: [], limit: 0, error: '' });
    s.error = task.error || '';
    if (task.error) continue;
    s.limit = task.memoryLimitBytes || 0;
    s.mem.push([t, task.memoryBytes]);
    const c = cores(before.get(task.name), task, seconds);
    if (c !== null) s.cpu.push([t, c]);
    for (const k of ['cpu', 'mem']) if (s[k].length > keepPoints) s[k].splice(0, s[k].length - keepPoints);
  }
  return series;
}

// path is an SVG path of points [[t, v]] in a width × height box, time across (the
// oldest point at the left edge, the newest at the right) and value up to max at the top.
export function path(points, { width, height, max }) {
  if (points.length < 2 || !(max > 0)) return '';
  const end = points[points.length - 1][0];
  const span = Math.max(end - points[0][0], 1);
  const x = (t) => width - ((end - t) / span) * width;
  const y = (v) => height - (Math.min(v, max) / max) * height;
  return points.map(([t, v], i) => `${i ? 'L' : 'M'}${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
}

// taskSpecs are a task group's tasks as its template defines them, by name (the names
// berth gives them: a container's name or c{i}, a process's procName, -{i} when two share
// it; api/v4.TaskNames).
export function taskSpecs(tg) {
  const spec = ((tg.spec || {}).template || {}).spec || {};
  const out = [];
  const seen = new Set();
  (spec.containers || []).forEach((c, i) => {
    const name = !c.name || seen.has(c.name) ? `c${i}` : c.name;
    seen.add(name);
    out.push({ name, spec: c });
  });
  (spec.processes || []).forEach((p, i) => {
    const name = seen.has(p.procName) ? `${p.procName}-${i}` : p.procName;
    seen.add(name);
    out.push({ name, spec: p });
  });
  return out;
}

// ports are an instance's ports: each task's declared port with the host port the
// scheduler gave it (spec.ports, by name), or the one declared when it holds none.
export function ports(tg) {
  const held = new Map(((tg.spec || {}).ports || []).map((p) => [p.name, p]));
  const out = [];
  for (const { name, spec } of taskSpecs(tg)) {
    for (const p of spec.ports || []) {
      const h = held.get(p.name);
      const host = h ? h.hostPort : p.hostPort > 0 ? p.hostPort : 0;
      out.push({ task: name, name: p.name, containerPort: p.containerPort || 0, hostPort: host, protocol: ((h && h.protocol) || p.protocol || 'TCP').toUpperCase() });
    }
  }
  return out;
}

// env is a task's environment as the page shows it: literal values; a value from the
// task's resources by its field; a value from a secret by the secret's name and key only.
// The value of a secret is never read (the page does not fetch secrets).
export function env(spec) {
  const out = [];
  for (const e of spec.env || []) {
    if (e.valueFrom && e.valueFrom.resourceFieldRef) out.push({ name: e.name, from: `resource ${e.valueFrom.resourceFieldRef.resource}` });
    else out.push({ name: e.name, value: e.value || '' });
  }
  for (const s of spec.secrets || []) {
    for (const it of s.items || []) {
      if ((it.type || '').toLowerCase() === 'env') out.push({ name: it.keyOrPath, from: `secret ${s.secretName}, key ${it.dataKey}` });
    }
  }
  return out;
}

// addNodeSample adds a node's sample (GET /v1/nodes/NAME/usage) to its series: { cpu: {
// host, instances }, mem: { host, instances } } of [[t, value]], keeping the last
// keepPoints of each. The agent measures CPU as cores over the window since its previous
// sample, so a first sample (window 0) adds memory only; callers close together share
// one sample, which is added once.
export function addNodeSample(series, cur) {
  const s = series.cpu ? series : Object.assign(series, { cpu: { host: [], instances: [] }, mem: { host: [], instances: [] }, last: 0 });
  const t = new Date(cur.time).getTime();
  if (t <= s.last) return s;
  s.last = t;
  const host = cur.host || {};
  const inst = cur.instances || {};
  s.mem.host.push([t, host.memoryBytes || 0]);
  s.mem.instances.push([t, inst.memoryBytes || 0]);
  if (cur.windowSeconds > 0) {
    s.cpu.host.push([t, host.cpuCores || 0]);
    s.cpu.instances.push([t, inst.cpuCores || 0]);
  }
  for (const k of ['cpu', 'mem']) {
    for (const pts of Object.values(s[k])) if (pts.length > keepPoints) pts.splice(0, pts.length - keepPoints);
  }
  return s;
}
