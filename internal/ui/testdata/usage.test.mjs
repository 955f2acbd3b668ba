// What an instance's page computes: CPU rates from two samples of a counter, the series
// it keeps, the path it draws, and its ports and environment without a secret's value
// (run by words_test.go through node's test runner).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cores, addSample, path, ports, env, taskSpecs, keepPoints } from '../static/js/usage.js';

test('cores from two samples of the CPU counter', () => {
  const cases = [
    [{ cpuSeconds: 10 }, { cpuSeconds: 13 }, 2, 1.5],
    [{ cpuSeconds: 10 }, { cpuSeconds: 10 }, 3, 0],
    [{ cpuSeconds: 10 }, { cpuSeconds: 2 }, 3, null], // restarted: the counter went back
    [null, { cpuSeconds: 2 }, 3, null],
    [{ cpuSeconds: 1 }, { cpuSeconds: 2, error: 'not running' }, 3, null],
    [{ cpuSeconds: 1 }, { cpuSeconds: 2 }, 0, null],
  ];
  for (const [prev, cur, s, want] of cases) assert.equal(cores(prev, cur, s), want, JSON.stringify([prev, cur, s]));
});

test('a series keeps the last points, and a failed task says why', () => {
  const series = {};
  let prev = null;
  for (let i = 0; i <= keepPoints + 5; i++) {
    const cur = { time: new Date(i * 1000).toISOString(), tasks: [
      { name: 'a', cpuSeconds: i * 0.5, memoryBytes: 1000 + i, memoryLimitBytes: 4096 },
      { name: 'b', error: 'task b is not running' }] };
    addSample(series, prev, cur);
    prev = cur;
  }
  assert.equal(series.a.cpu.length, keepPoints);
  assert.equal(series.a.mem.length, keepPoints);
  assert.equal(series.a.cpu[0][1], 0.5);
  assert.equal(series.a.limit, 4096);
  assert.equal(series.a.mem.at(-1)[1], 1000 + keepPoints + 5);
  assert.equal(series.b.error, 'task b is not running');
  assert.equal(series.b.cpu.length, 0);
});

test('a path needs two points and spans the box', () => {
  assert.equal(path([[0, 1]], { width: 100, height: 10, max: 2 }), '');
  assert.equal(path([[0, 1], [5, 2]], { width: 100, height: 10, max: 0 }), '');
  assert.equal(path([[0, 0], [5, 1], [10, 4]], { width: 100, height: 10, max: 2 }), 'M0.0,10.0 L50.0,5.0 L100.0,0.0');
  assert.equal(path([[20, 2], [30, 0]], { width: 100, height: 10, max: 2 }), 'M0.0,0.0 L100.0,10.0');
});

const tg = {
  spec: {
    ports: [{ name: 'http', hostPort: 31000, protocol: 'tcp', random: true }],
    template: { spec: {
      containers: [{ name: 'web', ports: [{ name: 'http', containerPort: 80 }, { name: 'admin', containerPort: 9000, protocol: 'UDP' }],
        env: [{ name: 'MODE', value: 'prod' }, { name: 'CPU', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } }],
        secrets: [{ secretName: 'db', items: [{ type: 'env', dataKey: 'password', keyOrPath: 'DB_PASSWORD' }, { type: 'file', dataKey: 'cert', keyOrPath: '/etc/cert' }] }] },
      { ports: [] }],
      processes: [{ procName: 'web', ports: [{ name: 'p', containerPort: 8080, hostPort: 8080 }] }],
    } },
  },
};

test('task names are berth\'s own', () => {
  assert.deepEqual(taskSpecs(tg).map((t) => t.name), ['web', 'c1', 'web-0']);
});

test('ports: the host port the scheduler gave, or the one declared', () => {
  assert.deepEqual(ports(tg), [
    { task: 'web', name: 'http', containerPort: 80, hostPort: 31000, protocol: 'TCP' },
    { task: 'web', name: 'admin', containerPort: 9000, hostPort: 0, protocol: 'UDP' },
    { task: 'web-0', name: 'p', containerPort: 8080, hostPort: 8080, protocol: 'TCP' },
  ]);
});

test('env names a secret and its key, never a value', () => {
  const got = env(tg.spec.template.spec.containers[0]);
  assert.deepEqual(got, [
    { name: 'MODE', value: 'prod' },
    { name: 'CPU', from: 'resource limits.cpu' },
    { name: 'DB_PASSWORD', from: 'secret db, key password' },
  ]);
  for (const e of got) assert.ok(!('value' in e) || e.name === 'MODE');
});

test('a node series: memory from every sample, CPU once there is a window, shared samples once', async () => {
  const { addNodeSample } = await import('../static/js/usage.js');
  const sample = (i, window) => ({ time: new Date(i * 1000).toISOString(), windowSeconds: window,
    host: { cpuCores: 1 + i, memoryBytes: 100 + i }, instances: { cpuCores: i / 10, memoryBytes: 10 + i } });
  const s = {};
  addNodeSample(s, sample(1, 0));
  assert.deepEqual(s.cpu.host, []);
  assert.deepEqual(s.mem.host, [[1000, 101]]);
  addNodeSample(s, sample(1, 0)); // the same sample again: nothing added
  addNodeSample(s, sample(3, 2));
  assert.deepEqual(s.cpu.host, [[3000, 4]]);
  assert.deepEqual(s.cpu.instances, [[3000, 0.3]]);
  assert.deepEqual(s.mem.instances, [[1000, 11], [3000, 13]]);
  for (let i = 4; i < keepPoints + 10; i++) addNodeSample(s, sample(i, 1));
  assert.equal(s.mem.host.length, keepPoints);
  assert.equal(s.cpu.host.length, keepPoints);
});
