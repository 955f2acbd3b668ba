// How a workload's state reads on the page. An instance the scheduler could not place
// is waiting, not broken: berth's controller marks such a workload Abnormal with the
// scheduler's reason in its message ("1 of 1 instances cannot be placed: 1 node: 1
// insufficient cpu", internal/controller/pass.go), and the page shows it as Pending,
// waiting for a node, with that reason.
import { h, badge } from './dom.js';

const cannotPlace = /^\d+ of \d+ instances cannot be placed: ([\s\S]*)$/;
const waitsForNode = /^instance \d+ waits for node (\S+) \(([^)]*)\): ([\s\S]*)$/;

// waiting says what a workload's instances wait for, from its status message: the words
// after "Pending — " and the scheduler's reason; null when none waits.
export function waiting(obj) {
  const msg = ((obj.status || {}).message || '').trim();
  let m = msg.match(cannotPlace);
  if (m) return { what: 'waiting for a node', reason: m[1] };
  m = msg.match(waitsForNode);
  if (m) return { what: `waiting for node ${m[1]} (${m[2]})`, reason: m[3] };
  return null;
}

// instanceWaiting says what one instance (task group) of owner waits for: an instance not
// placed waits for a node; one placed waits only when its owner's message names its index
// (held for its node by hostRetainTime). null when it does not wait.
export function instanceWaiting(tg, owner) {
  const w = owner ? waiting(owner) : null;
  if (!w) return null;
  if (!tg.spec.node) return w;
  const m = ((owner.status || {}).message || '').match(/^instance (\d+) waits for node/);
  return m && Number(m[1]) === tg.spec.index ? w : null;
}

// phaseOf is the phase the page shows: Pending while instances wait for a node.
export function phaseOf(obj) {
  return waiting(obj) ? 'Pending' : (obj.status || {}).phase;
}

// phaseBadge is the phase's badge; a waiting workload's says why in its tooltip.
export function phaseBadge(obj) {
  const b = badge(phaseOf(obj));
  const w = waiting(obj);
  if (w) b.title = `${w.what}: ${w.reason}`;
  return b;
}

// stateLine is the phase with, when instances wait, "— waiting for a node: REASON".
export function stateLine(obj) {
  const w = waiting(obj);
  if (!w) return phaseBadge(obj);
  return h('span', { class: 'waiting' }, phaseBadge(obj), ` — ${w.what}: `, h('span', { class: 'why' }, w.reason));
}

// message is the status message the page shows beside the phase: none when the phase
// line already says it.
export function message(obj) {
  return waiting(obj) ? '' : ((obj.status || {}).message || '');
}

// note is the line a list shows beside the phase: why instances wait, or the message.
export function note(obj) {
  const w = waiting(obj);
  return w ? `${w.what}: ${w.reason}` : message(obj);
}
