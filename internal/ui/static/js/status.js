// How a workload's state reads on the page. An instance the scheduler could not place
// is waiting, not broken: berth's controller marks such a workload Abnormal and says why
// in status.pending (api/v4/pending.go: reason Unschedulable or WaitingForHost, the
// scheduler's message, the waiting indexes), and the page shows it as Pending, waiting
// for a node, with that reason.
import { h, badge } from './dom.js';

// left is how long until the time t, in whole seconds or minutes ("42s", "3m").
function left(t) {
  const s = Math.max(0, Math.round((Date.parse(t) - Date.now()) / 1000));
  return s < 120 ? `${s}s` : `${Math.round(s / 60)}m`;
}

// waiting says what a workload's instances wait for, from its status.pending: the words
// after "Pending — " and the scheduler's reason; null when none waits.
export function waiting(obj) {
  const p = (obj.status || {}).pending;
  if (!p) return null;
  if (p.reason === 'WaitingForHost') {
    return { what: `waiting for node ${p.node} (hostRetainTime, ${left(p.until)} left)`, reason: p.message || '' };
  }
  return { what: 'waiting for a node', reason: p.message || '' };
}

// instanceWaiting says what one instance (task group) of owner waits for: an instance not
// placed waits for a node; one placed waits only when it is held for its node
// (hostRetainTime) and pending lists its index. null when it does not wait.
export function instanceWaiting(tg, owner) {
  const w = owner ? waiting(owner) : null;
  if (!w) return null;
  if (!tg.spec.node) return w;
  const p = owner.status.pending;
  return p.reason === 'WaitingForHost' && (p.indexes || []).includes(tg.spec.index) ? w : null;
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
