// The console's words for sizes and for a workload waiting for a node (run by
// words_test.go through node's test runner).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bytes } from '../static/js/dom.js';
import { waiting, phaseOf, note, message, instanceWaiting } from '../static/js/status.js';

test('bytes', () => {
  const cases = [[0, '0 B'], [512, '512 B'], [1024, '1 KiB'], [139264, '136 KiB'], [1572864, '1.5 MiB'],
    [8 * 2 ** 30, '8 GiB'], [-1, ''], [NaN, '']];
  for (const [n, want] of cases) assert.equal(bytes(n), want, `bytes(${n})`);
});

const app = (phase, message, pending) => ({ kind: 'application', spec: { instance: 1 }, status: { phase, message, pending } });
const unschedulable = (indexes) => ({ reason: 'Unschedulable', message: '1 node: 1 insufficient cpu', check: 'resources', instances: indexes.length, indexes });
const held = (index) => ({ reason: 'WaitingForHost', message: 'node n1 is NotReady', check: 'node', instances: 1, indexes: [index],
  node: 'n1', until: new Date(Date.now() + 30400).toISOString() });

test('a workload no node fits is pending, with the reason', () => {
  const w = app('Abnormal', '1 of 1 instances cannot be placed: 1 node: 1 insufficient cpu', unschedulable([0]));
  assert.deepEqual(waiting(w), { what: 'waiting for a node', reason: '1 node: 1 insufficient cpu' });
  assert.equal(phaseOf(w), 'Pending');
  assert.equal(note(w), 'waiting for a node: 1 node: 1 insufficient cpu');
  assert.equal(message(w), '');
});

test('an instance held for its node waits for that node', () => {
  const w = app('Deploying', 'instance 0 waits for node n1 (hostRetainTime, 30s left): node n1 is NotReady', held(0));
  assert.deepEqual(waiting(w), { what: 'waiting for node n1 (hostRetainTime, 30s left)', reason: 'node n1 is NotReady' });
});

test('anything else keeps its phase and message: the words of a message are not read', () => {
  const words = app('Abnormal', '1 of 1 instances cannot be placed: 1 node: 1 insufficient cpu'); // no status.pending
  for (const w of [app('Running', ''), app('Abnormal', 'instance 0 failed: exit 1'), { kind: 'process', spec: {} }, words]) {
    assert.equal(waiting(w), null);
    assert.equal(phaseOf(w), (w.status || {}).phase);
    assert.equal(note(w), (w.status || {}).message || '');
  }
});

test('an instance waits when it is not placed, or when its owner lists it held for its node', () => {
  const holding = app('Deploying', '', held(1));
  const unplaced = app('Abnormal', '', unschedulable([1]));
  const tg = (index, node) => ({ spec: { index, node } });
  assert.equal(instanceWaiting(tg(1, 'n1'), holding).what, 'waiting for node n1 (hostRetainTime, 30s left)');
  assert.equal(instanceWaiting(tg(0, 'n2'), holding), null);
  assert.equal(instanceWaiting(tg(1, ''), unplaced).reason, '1 node: 1 insufficient cpu');
  assert.equal(instanceWaiting(tg(0, 'n2'), unplaced), null);
  assert.equal(instanceWaiting(tg(0, ''), null), null);
  assert.equal(instanceWaiting(tg(0, ''), app('Running', '')), null);
});
