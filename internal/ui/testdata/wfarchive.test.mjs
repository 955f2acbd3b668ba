// The workflow archive in the console (run by words_test.go through node's test runner):
// the routes' paths and the page's link keep a hostile name or uid inside its own path
// segment or parameter, Retry is offered only for a failed workflow, the badge says when
// it was archived and until when it is kept, and an archived entry's nodes draw the graph.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { archivePath, artifactPath, archivedHref, archivedActions, archivedWords, nodeList } from '../static/js/wfarchive.js';
import { graphOf } from '../static/js/wfgraph.js';

const hostile = 'x/../../v1/acl?archived=0&uid=1#frag';

test('the archive routes\' paths', () => {
  const cases = [
    [archivePath('ns'), '/v1/namespaces/ns/archivedworkflows'],
    [archivePath('ns', '', { params: { limit: 50, continue: 'flow/u1' } }), '/v1/namespaces/ns/archivedworkflows?limit=50&continue=flow%2Fu1'],
    [archivePath('ns', 'flow'), '/v1/namespaces/ns/archivedworkflows/flow'],
    [archivePath('ns', 'flow', { uid: 'u1' }), '/v1/namespaces/ns/archivedworkflows/flow?uid=u1'],
    [archivePath('ns', 'flow', { uid: 'u1', sub: '/actions/retry' }), '/v1/namespaces/ns/archivedworkflows/flow/actions/retry?uid=u1'],
    [artifactPath('ns', 'flow', 'flow-1', 'main-logs'), '/v1/namespaces/ns/workflows/flow/artifacts/flow-1/main-logs'],
    [artifactPath('ns', 'flow', 'flow-1', 'out', 'u1'), '/v1/namespaces/ns/workflows/flow/artifacts/flow-1/out?uid=u1'],
  ];
  for (const [got, want] of cases) assert.equal(got, want);
});

test('a hostile name or uid stays in its own segment or parameter', () => {
  const p = new URL(archivePath('../ns', hostile, { uid: hostile, sub: '/actions/resubmit' }), 'https://berth.example');
  const segs = p.pathname.split('/');
  assert.deepEqual(segs.slice(0, 4), ['', 'v1', 'namespaces', '..%2Fns']);
  assert.equal(decodeURIComponent(segs[5]), hostile);
  assert.deepEqual(segs.slice(6), ['actions', 'resubmit']);
  assert.deepEqual([...p.searchParams], [['uid', hostile]]);
  assert.equal(p.hash, '');
  const a = new URL(artifactPath('ns', hostile, hostile, hostile, hostile), 'https://berth.example');
  assert.equal(a.pathname.split('/').length, 9, a.pathname); // '', v1, namespaces, ns, workflows, name, artifacts, id, artifact
  assert.deepEqual([...a.searchParams], [['uid', hostile]]);
});

test('the archived page\'s link routes to that workflow, as main.js reads it', () => {
  for (const [ns, name, uid] of [['team', 'flow', 'u1'], ['team', 'flow', ''], ['a b', hostile, hostile]]) {
    const href = archivedHref(ns, name, uid);
    const [path, qs] = href.split('?');
    const m = path.match(/^#\/wf\/([^/]+)\/([^/]+)$/); // main.js's route of the workflow page
    assert.ok(m, href);
    assert.deepEqual(m.slice(1).map(decodeURIComponent), [ns, name]);
    const params = new URLSearchParams(qs);
    assert.equal(params.get('archived'), '1');
    assert.equal(params.get('uid'), uid || null);
    assert.deepEqual([...params.keys()], uid ? ['archived', 'uid'] : ['archived']);
  }
});

test('Retry only for a failed workflow', () => {
  const cases = [['Failed', ['retry', 'resubmit', 'delete']], ['Error', ['retry', 'resubmit', 'delete']],
    ['Succeeded', ['resubmit', 'delete']], [undefined, ['resubmit', 'delete']], ['failed', ['resubmit', 'delete']]];
  for (const [phase, want] of cases) assert.deepEqual(archivedActions(phase), want, String(phase));
});

test('the archived badge\'s words', () => {
  const at = new Date(Date.now() - 3 * 3600 * 1000 - 5000).toISOString();
  assert.deepEqual(archivedWords({ archivedAt: at }), { text: 'Archived 3h ago', title: `archived at ${at}; kept until deleted` });
  const w = archivedWords({ archivedAt: at, expiresAt: '2030-01-02T03:04:05Z' });
  assert.equal(w.title, `archived at ${at}; expires at 2030-01-02T03:04:05Z`);
  assert.equal(archivedWords({}).text, 'Archived');
});

test('an archived workflow\'s nodes draw its graph', () => {
  assert.deepEqual(nodeList({}), []);
  assert.deepEqual(nodeList({ status: {} }), []);
  const wf = {
    spec: { templates: [{ name: 'main', dag: { tasks: [{ name: 'a', template: 'run' }, { name: 'b', template: 'run', depends: 'a.Failed' }] } }] },
    status: { phase: 'Failed', uid: 'u1', nodes: {
      r: { id: 'r', name: 'flow', displayName: 'flow', type: 'DAG', templateName: 'main', phase: 'Failed', children: ['x', 'y'] },
      x: { id: 'x', name: 'flow.a', displayName: 'a', type: 'Pod', phase: 'Failed' },
      // A node status without its id (older records) takes the map's key.
      y: { name: 'flow.b', displayName: '<img src=x onerror=alert(1)>', type: 'Pod', phase: 'Succeeded' },
    } },
  };
  const nodes = nodeList(wf);
  assert.deepEqual(nodes.map((n) => n.id).sort(), ['r', 'x', 'y']);
  const g = graphOf(wf, nodes);
  assert.deepEqual(g.nodes.map((n) => [n.id, n.phase]), [['r', 'Failed'], ['x', 'Failed'], ['y', 'Succeeded']]);
  assert.deepEqual(g.edges, [['r', 'x'], ['x', 'y']]);
  assert.equal(g.nodes[2].label, '<img src=x onerror=alert(1)>'); // a label, drawn as text (workflow.js)
});
