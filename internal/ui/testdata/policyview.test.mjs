// What the cluster policy pages compute: a namespace's quota rows with their share and
// highlight, its limit defaults, webhooks' types, rules and selectors in words, what a
// node lends to the revocable tier, and a workload's tier and priority (run by
// words_test.go through node's test runner).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  amount, level, percent, quotaRows, defaultRows, hooksOf, hookType, rulesText, selectorText,
  nodeLends, lendsText, tierText, priorityText, timeoutText, failurePolicy,
} from '../static/js/policyview.js';

test('amounts as the CLI writes them', () => {
  const cases = [['cpu', 0.5, '0.5'], ['cpu', 1 / 3, '0.333'], ['memory', 2048, '2048MB'], ['disk', 0, '0MB'],
    ['gpu', 2, '2'], ['bytes', 1536, '1.5 KiB'], ['cpu', NaN, '']];
  for (const [name, v, want] of cases) assert.equal(amount(name, v), want, `${name} ${v}`);
});

test('a resource is hot from 90% of its limit', () => {
  const cases = [[0, null, ''], [5, undefined, ''], [0, 10, 'ok'], [8.99, 10, 'ok'], [9, 10, 'hot'], [10, 10, 'hot'],
    [11, 10, 'over'], [0, 0, 'ok'], [1, 0, 'over']];
  for (const [used, limit, want] of cases) assert.equal(level(used, limit), want, `${used}/${limit}`);
  assert.equal(percent(9, 10), 90);
  assert.equal(percent(1, 0), null);
  assert.equal(percent(1, null), null);
});

test('quota rows: every resource, the unbounded ones without a limit, then storage', () => {
  const q = {
    namespace: 'team-a', default: false,
    limits: { objects: 100, bytes: 1048576, resources: { cpu: 4, memory: 1000, gpu: 0 } },
    usage: { objects: 95, bytes: 1024 },
    resourceUsage: { cpu: 3.6, memory: 512, disk: 64, gpu: 0, 'vcuda-core': 0, 'vcuda-memory': 0, instances: 3 },
  };
  const rows = Object.fromEntries(quotaRows(q).map((r) => [r.name, r]));
  assert.deepEqual(Object.keys(rows), ['cpu', 'memory', 'disk', 'gpu', 'vcuda-core', 'vcuda-memory', 'instances', 'objects', 'bytes']);
  assert.deepEqual([rows.cpu.usedText, rows.cpu.limitText, rows.cpu.percent, rows.cpu.level], ['3.6', '4', 90, 'hot']);
  assert.deepEqual([rows.memory.usedText, rows.memory.limitText, rows.memory.level], ['512MB', '1000MB', 'ok']);
  assert.deepEqual([rows.disk.limit, rows.disk.limitText, rows.disk.level], [null, 'no limit', '']);
  assert.deepEqual([rows.gpu.limit, rows.gpu.level, rows.gpu.percent], [0, 'ok', null]);
  assert.deepEqual([rows.objects.usedText, rows.objects.limitText, rows.objects.level], ['95', '100', 'hot']);
  assert.deepEqual([rows.bytes.usedText, rows.bytes.limitText, rows.bytes.level], ['1 KiB', '1 MiB', 'ok']);
  // An answer missing its parts still gives every row, none bounded.
  assert.ok(quotaRows({}).every((r) => r.limit === null && r.used === 0));
});

test('limit defaults: only the resources some default names', () => {
  assert.deepEqual(defaultRows(undefined), []);
  assert.deepEqual(defaultRows({ defaultRequests: { cpu: 0.25, memory: 128 }, max: { cpu: 4, gpu: 1 } }), [
    ['cpu', '0.25', '-', '4'], ['memory', '128MB', '-', '-'], ['gpu', '-', '-', '1']]);
});

test('webhooks: hooks of either shape, their type, rules and defaults', () => {
  const k8s = { kind: 'ValidatingWebhookConfiguration', webhooks: [{ name: 'v', rules: [{ operations: ['CREATE', 'UPDATE'], kinds: ['application'], resources: ['deploy*'] }] }] };
  assert.equal(hooksOf(k8s).length, 1);
  assert.equal(hookType(k8s, k8s.webhooks[0]), 'Validating');
  assert.deepEqual(rulesText(k8s, k8s.webhooks[0]), ['CREATE,UPDATE on application,deploy*']);
  assert.equal(timeoutText(k8s.webhooks[0]), '10s');
  assert.equal(failurePolicy(k8s.webhooks[0]), 'Fail');
  const bcs = { kind: 'AdmissionWebhookConfiguration', resourcesRef: { operation: 'Create', kind: 'application' },
    admissionWebhooks: [{ name: 'inject', type: 'Validating', timeoutSeconds: 3, failurePolicy: 'Ignore' }] };
  const hook = hooksOf(bcs)[0];
  assert.equal(hook.name, 'inject');
  assert.equal(hookType(bcs, hook), 'Validating');
  assert.equal(hookType({ kind: 'admissionwebhook' }, {}), 'Mutating');
  assert.deepEqual(rulesText(bcs, hook), ['Create on application']);
  assert.deepEqual([timeoutText(hook), failurePolicy(hook)], ['3s', 'Ignore']);
  assert.deepEqual(hooksOf({ kind: 'admissionwebhook' }), []);
});

test('selectors in words', () => {
  const cases = [
    [undefined, 'all namespaces'],
    [{}, 'all namespaces'],
    [{ operator: 'NotIn', values: ['infra', 'kube-*'] }, 'NotIn infra, kube-*'],
    [{ matchLabels: { 'kubernetes.io/metadata.name': 'team-a' } }, 'kubernetes.io/metadata.name=team-a'],
    [{ matchLabels: { inject: 'true' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['web', 'api'] }, { key: 'canary', operator: 'DoesNotExist' }] },
      'inject=true; tier In (web, api); canary DoesNotExist'],
  ];
  for (const [sel, want] of cases) assert.equal(selectorText(sel, 'all namespaces'), want, JSON.stringify(sel));
});

test('what a node lends: as the server reckons it, nothing without a fresh report', () => {
  const node = { spec: { allocatable: { cpu: 8, memoryMB: 8192 } },
    status: { revocable: { time: '2026-01-01T00:00:30Z', usedCPU: 2, usedMemoryMB: 1024, maxFraction: 0.5, margin: 0.1, evictions: 2 } } };
  const usage = { cpu: 6, memoryMB: 4096, revocableCPU: 1, revocableMemoryMB: 512, lends: { cpu: 3.2, memoryMB: 2252.8 } };
  const l = nodeLends(node, usage);
  assert.equal(l.cpu, 3.2);
  assert.equal(l.memoryMB, 2252.8);
  assert.equal(lendsText(l), '3.2 cores, 2252.8MB; revocable reserve 1 cores, 512MB; 2 evicted');
  assert.deepEqual(nodeLends(node, { ...usage, lends: undefined }), { stale: true });
  assert.equal(lendsText({ stale: true }), 'nothing (report stale)');
  assert.equal(nodeLends({ spec: {}, status: {} }, usage), null);
  assert.equal(lendsText(null), 'nothing (no report)');
});

test('a workload\'s tier and priority', () => {
  assert.equal(tierText({ tier: 'revocable' }), 'revocable');
  assert.equal(tierText({}), 'guaranteed');
  assert.equal(tierText(undefined), 'guaranteed');
  assert.equal(priorityText({}), '');
  assert.equal(priorityText({ priorityClassName: 'batch', priority: 1000 }), '1000 (batch, PreemptLowerPriority)');
  assert.equal(priorityText({ priority: 5, preemptionPolicy: 'Never' }), '5 (default, Never)');
});
