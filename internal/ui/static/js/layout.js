// A layered layout of a directed graph for SVG (the workflow page's DAG): a pure
// function, no DOM. Layers by longest path from the sources, so every edge points down;
// within layers, a bounded number of barycenter sweeps orders the nodes to reduce edge
// crossings; ties keep the previous order, so the same graph always lays out the same.

export const defaults = { width: 168, height: 36, gapX: 24, gapY: 56, sweeps: 8 };

// layers assigns each node its longest-path layer (Kahn's order). Nodes on a cycle (never
// in a workflow's graph, but the statuses are input) are put below everything placed,
// and the edges that close the cycle are dropped: the caller gets them in `dropped`.
function layers(ids, edges) {
  const index = new Map(ids.map((id, i) => [id, i]));
  const out = ids.map(() => []);
  const indeg = ids.map(() => 0);
  for (const [a, b] of edges) {
    const i = index.get(a);
    const j = index.get(b);
    if (i === undefined || j === undefined || i === j) continue;
    out[i].push(j);
    indeg[j]++;
  }
  const layer = ids.map(() => -1);
  const queue = [];
  ids.forEach((_, i) => { if (indeg[i] === 0) { queue.push(i); layer[i] = 0; } });
  for (let q = 0; q < queue.length; q++) {
    const i = queue[q];
    for (const j of out[i]) {
      layer[j] = Math.max(layer[j], layer[i] + 1);
      if (--indeg[j] === 0) queue.push(j);
    }
  }
  // What a cycle kept out: one layer each below the deepest, in input order.
  let deepest = layer.reduce((m, l) => Math.max(m, l), -1);
  ids.forEach((_, i) => { if (layer[i] < 0) layer[i] = ++deepest; });
  return { layer, out, index };
}

// layout places ids (unique strings) and edges ([from, to] pairs of ids; others are
// ignored) and answers { nodes: Map id → {x, y, layer, order}, edges: [{from, to, d}],
// width, height, crossings }. x and y are the node's top left corner.
export function layout(ids, edges, options = {}) {
  const o = { ...defaults, ...options };
  const { layer, out, index } = layers(ids, edges);
  const rows = [];
  ids.forEach((_, i) => { (rows[layer[i]] ??= []).push(i); });
  for (let l = 0; l < rows.length; l++) rows[l] ??= [];
  const ins = ids.map(() => []);
  const kept = []; // [i, j] with layer[i] < layer[j]
  out.forEach((js, i) => js.forEach((j) => { if (layer[i] < layer[j]) { ins[j].push(i); kept.push([i, j]); } }));
  const pos = new Array(ids.length);
  const place = () => rows.forEach((r) => r.forEach((i, k) => { pos[i] = k; }));
  place();
  // Barycenter sweeps: down (by the layer above), then up (by the layer below).
  for (let s = 0; s < o.sweeps; s++) {
    const down = s % 2 === 0;
    const order = down ? rows.keys() : [...rows.keys()].reverse();
    for (const l of order) {
      const near = (i) => (down ? ins[i] : out[i].filter((j) => layer[j] > layer[i]));
      const bary = new Map(rows[l].map((i) => {
        const ns = near(i);
        return [i, ns.length ? ns.reduce((a, j) => a + pos[j], 0) / ns.length : pos[i]];
      }));
      rows[l].sort((a, b) => bary.get(a) - bary.get(b) || pos[a] - pos[b]);
      rows[l].forEach((i, k) => { pos[i] = k; });
    }
  }
  const widest = rows.reduce((m, r) => Math.max(m, r.length), 0);
  const step = o.width + o.gapX;
  const nodes = new Map();
  rows.forEach((r, l) => {
    const offset = ((widest - r.length) * step) / 2; // each layer centred under the widest
    r.forEach((i, k) => nodes.set(ids[i], { x: offset + k * step, y: l * (o.height + o.gapY), layer: l, order: k }));
  });
  const paths = kept.map(([i, j]) => {
    const a = nodes.get(ids[i]);
    const b = nodes.get(ids[j]);
    const x1 = a.x + o.width / 2;
    const y1 = a.y + o.height;
    const x2 = b.x + o.width / 2;
    const y2 = b.y;
    const my = y1 + o.gapY / 2;
    return { from: ids[i], to: ids[j], d: `M${x1},${y1} C${x1},${my} ${x2},${y2 - o.gapY / 2} ${x2},${y2}` };
  });
  return {
    nodes, edges: paths, crossings: crossings(kept, layer, pos),
    width: Math.max(0, widest * step - o.gapX), height: Math.max(0, rows.length * (o.height + o.gapY) - o.gapY),
  };
}

// crossings counts the pairs of edges between the same two adjacent layers that cross
// (edges over several layers are not counted): the measure the sweeps lower. Each edge
// is compared with the next 2,000 of its layer pair at most, so a layer of thousands
// costs no more than that.
export function crossings(kept, layer, pos) {
  const by = new Map();
  for (const [i, j] of kept) {
    if (layer[j] !== layer[i] + 1) continue;
    const k = layer[i];
    if (!by.has(k)) by.set(k, []);
    by.get(k).push([pos[i], pos[j]]);
  }
  let n = 0;
  for (const es of by.values()) {
    for (let a = 0; a < es.length; a++) {
      for (let b = a + 1; b < es.length && b < a + 2000; b++) {
        if ((es[a][0] - es[b][0]) * (es[a][1] - es[b][1]) < 0) n++;
      }
    }
  }
  return n;
}
