// The workflow page's graph and its layout (run by words_test.go through node's test
// runner): no two nodes overlap, every edge points down, the same graph lays out the
// same, the sweeps lower crossings, and a loop of thousands is collapsed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { layout, defaults } from '../static/js/layout.js';
import { graphOf, dependsNames } from '../static/js/wfgraph.js';

// A seeded generator, so a failure names a graph that can be drawn again.
function rng(seed) {
  let s = seed >>> 0;
  return () => { s = (s * 1664525 + 1013904223) >>> 0; return s / 2 ** 32; };
}

function randomDAG(seed, n, p) {
  const r = rng(seed);
  const ids = Array.from({ length: n }, (_, i) => `n${i}`);
  const edges = [];
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) if (r() < p) edges.push([ids[i], ids[j]]);
  // Shuffled input: the layout must not depend on ids being in topological order.
  const shuffled = [...ids].sort(() => r() - 0.5);
  return { ids: shuffled, edges };
}

function checkLayout(ids, edges, l) {
  const boxes = [...l.nodes.values()];
  assert.equal(boxes.length, ids.length);
  const taken = new Set();
  for (const b of boxes) {
    const key = `${b.layer}/${b.order}`;
    assert.ok(!taken.has(key), `two nodes at ${key}`);
    taken.add(key);
  }
  const byLayer = new Map();
  for (const b of boxes) (byLayer.get(b.y) || byLayer.set(b.y, []).get(b.y)).push(b);
  for (const row of byLayer.values()) {
    row.sort((a, b) => a.x - b.x);
    for (let i = 1; i < row.length; i++) assert.ok(row[i].x >= row[i - 1].x + defaults.width, 'nodes overlap in a layer');
  }
  for (const [a, b] of edges) {
    assert.ok(l.nodes.get(a).y + defaults.height <= l.nodes.get(b).y, `edge ${a}→${b} does not point down`);
  }
  for (const e of l.edges) assert.match(e.d, /^M[\d.]+,[\d.]+ C/);
  for (const b of boxes) assert.ok(b.x >= 0 && b.x + defaults.width <= l.width + 1e-9 && b.y + defaults.height <= l.height + 1e-9);
}

test('random DAGs: no overlap, edges point down, deterministic', () => {
  for (let seed = 1; seed <= 40; seed++) {
    const { ids, edges } = randomDAG(seed, 5 + (seed % 30), 0.15);
    const l = layout(ids, edges);
    checkLayout(ids, edges, l);
    assert.deepEqual([...layout(ids, edges).nodes], [...l.nodes], `seed ${seed} laid out twice differently`);
    assert.equal(l.edges.length, edges.length);
  }
});

test('longest path layering', () => {
  const l = layout(['a', 'b', 'c', 'd'], [['a', 'b'], ['b', 'c'], ['a', 'c'], ['c', 'd'], ['a', 'd']]);
  assert.deepEqual(['a', 'b', 'c', 'd'].map((id) => l.nodes.get(id).layer), [0, 1, 2, 3]);
});

test('the sweeps undo crossings of a crossed bipartite graph', () => {
  // a→y, b→x drawn in input order cross once; the sweeps untangle them.
  const ids = ['a', 'b', 'x', 'y'];
  const l = layout(ids, [['a', 'y'], ['b', 'x']]);
  assert.equal(l.crossings, 0);
  const unswept = layout(ids, [['a', 'y'], ['b', 'x']], { sweeps: 0 });
  assert.equal(unswept.crossings, 1);
  const big = randomDAG(7, 60, 0.05);
  assert.ok(layout(big.ids, big.edges).crossings <= layout(big.ids, big.edges, { sweeps: 0 }).crossings);
});

test('a cycle or a self edge does not hang it and every node is placed', () => {
  const ids = ['a', 'b', 'c', 'd'];
  const l = layout(ids, [['a', 'b'], ['b', 'c'], ['c', 'b'], ['d', 'd'], ['x', 'a']]);
  assert.equal(l.nodes.size, 4);
  const taken = new Set([...l.nodes.values()].map((b) => `${b.layer}/${b.order}`));
  assert.equal(taken.size, 4);
});

const wf = {
  spec: {
    templates: [
      { name: 'main', dag: { tasks: [
        { name: 'prepare', template: 'run' },
        { name: 'train', template: 'run', dependencies: ['prepare'] },
        { name: 'eval', template: 'run', depends: 'train.Succeeded || (prepare && train.Failed)' },
      ] } },
      { name: 'run', container: { image: 'x' } },
    ],
  },
};

function dagStatuses(items) {
  const n = [
    { id: 'r', name: 'w', type: 'DAG', templateName: 'main', phase: 'Running', children: ['p', 't', 'e'] },
    { id: 'p', name: 'w.prepare', displayName: 'prepare', type: 'Pod', phase: 'Succeeded' },
    { id: 't', name: 'w.train', displayName: 'train', type: 'TaskGroup', phase: 'Running', children: [] },
    { id: 'e', name: 'w.eval', displayName: 'eval', type: 'Pod', phase: 'Pending' },
  ];
  for (let i = 0; i < items; i++) {
    n.push({ id: `i${i}`, name: `w.train(${i})`, type: 'Pod', phase: i === 5 ? 'Failed' : i >= items - 3 ? 'Running' : 'Succeeded' });
    n[2].children.push(`i${i}`);
  }
  return n;
}

test('dependsNames', () => {
  assert.deepEqual(dependsNames('train.Succeeded || (prepare && train.Failed)').filter((x) => ['train', 'prepare'].includes(x)).sort(), ['prepare', 'train']);
  assert.deepEqual(dependsNames(''), []);
});

test('a DAG is drawn by its dependencies', () => {
  const g = graphOf(wf, dagStatuses(2));
  const has = (a, b) => g.edges.some(([x, y]) => x === a && y === b);
  assert.ok(has('r', 'p') && has('p', 't') && has('t', 'e') && has('p', 'e'));
  assert.ok(!has('r', 't') && !has('r', 'e'), 'a task with dependencies hangs under them, not under the DAG');
  assert.ok(has('t', 'i0') && has('t', 'i1'));
  const l = layout(g.nodes.map((n) => n.id), g.edges);
  checkLayout(g.nodes.map((n) => n.id), g.edges, l);
  assert.ok(l.nodes.get('e').layer > l.nodes.get('t').layer);
});

test('a loop of 5,000 items is collapsed and says so', () => {
  const g = graphOf(wf, dagStatuses(5000));
  assert.ok(g.nodes.length < 40, `${g.nodes.length} nodes drawn`);
  assert.equal(g.collapsed.length, 1);
  assert.equal(g.collapsed[0].count, 5000 - 20);
  const shown = new Set(g.nodes.map((n) => n.id));
  assert.ok(shown.has('i5') && shown.has('i4999'), 'the failed and running items are drawn first');
  const more = g.nodes.find((n) => n.type === 'more');
  assert.equal(more.label, '+4980 more');
  const all = graphOf(wf, dagStatuses(5000), { expanded: new Set(['t']) });
  assert.equal(all.nodes.length, 5004);
  const l = layout(all.nodes.map((n) => n.id), all.edges);
  assert.equal(l.nodes.size, 5004);
});

test('steps run group after group', () => {
  const s = [
    { id: 's', name: 'w', type: 'Steps', phase: 'Running', children: ['g0', 'g1'] },
    { id: 'g0', name: 'w[0]', type: 'StepGroup', children: ['a', 'b'] },
    { id: 'a', name: 'w[0].a', type: 'Pod' }, { id: 'b', name: 'w[0].b', type: 'Pod' },
    { id: 'g1', name: 'w[1]', type: 'StepGroup', children: ['c'] },
    { id: 'c', name: 'w[1].c', type: 'Pod' },
  ];
  const g = graphOf({}, s);
  const l = layout(g.nodes.map((n) => n.id), g.edges);
  const layer = (id) => l.nodes.get(id).layer;
  assert.ok(layer('s') < layer('g0') && layer('g0') < layer('a') && layer('a') < layer('g1') && layer('b') < layer('g1') && layer('g1') < layer('c'));
});
