// Small live charts (SVG sparklines) of usage samples: a line of points under a top, its
// current value in the caption. The points and the path come from usage.js.
import { h } from './dom.js';
import { path } from './usage.js';

const svgNS = 'http://www.w3.org/2000/svg';

function svg(tag, attrs) {
  const el = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  return el;
}

// graph is one chart of lines [{ points, cls, style }] under a top of max, captioned with
// title and the label of the first line's last value; marks are dashed levels [{ value,
// cls, style, title }] (a limit, what is reserved). Each path carries data-points.
export function graph(id, title, lines, max, label, marks = []) {
  const width = 240;
  const height = 60;
  const box = svg('svg', { viewBox: `0 0 ${width} ${height}`, width, height, class: 'spark', role: 'img', 'aria-label': title });
  box.append(svg('rect', { x: 0, y: 0, width, height, class: 'frame' }));
  for (const m of marks) {
    if (!(m.value > 0) || !(max > 0)) continue;
    const y = Math.max(1, height - (Math.min(m.value, max) / max) * height);
    const line = svg('line', { x1: 0, x2: width, y1: y, y2: y, class: m.cls, style: m.style || '' });
    line.append(svg('title', {}));
    line.lastChild.textContent = m.title;
    box.append(line);
  }
  for (const { points, cls, style } of lines) {
    box.append(svg('path', { d: path(points, { width, height, max }), class: cls, style: style || '', 'data-points': points.length }));
  }
  const first = lines[0].points;
  const last = first.length ? first[first.length - 1][1] : null;
  return h('figure', { class: 'graph', id },
    h('figcaption', {}, title, ': ', h('strong', { class: 'now' }, last === null ? '…' : label(last))), box);
}
