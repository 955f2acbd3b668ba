// The spec panes' YAML (yaml.js): what is written plain and what is quoted, block
// scalars and their chomping, empty collections, nesting (run by words_test.go through
// node's test runner; yaml_test.go parses the same output back with a YAML parser).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { toYAML, plain } from '../static/js/yaml.js';

test('strings are plain only when they read back as the same string', () => {
  const plainOnes = ['web', 'busybox:1.36', 'http://x.example/a?b=c', '-x', '.hidden', 'a#b', 'a:b', '1Gi', 'é', 'echo $HOME', './web'];
  for (const s of plainOnes) assert.ok(plain(s), s);
  const quotedOnes = ['', ' lead', 'trail ', 'true', 'False', 'yes', 'No', 'on', 'OFF', 'y', 'N', 'null', '~', '123', '-1', '+1', '1.5', '.5', '1e3',
    '0x1F', '0o17', '1_000', '2026-11-29', '2026-11-29T04:30:00Z', '12:30', '10.0.0.1', '.inf', '-.Inf', '.NaN', 'a: b', 'a #b', 'key:', '#c', '- x', '-', '?', ':x',
    '[a]', '{a}', '*ref', '&anchor', '!tag', '|', '>', "'q'", '"q"', '%x', '@x', '`x', '=', '<<', ',x', '---', '...', 'tab\there', 'bell\u0007',
    'bom\ufeff', 'a\nb'];
  for (const s of quotedOnes) assert.ok(!plain(s), JSON.stringify(s));
});

test('scalars, quoting and escapes', () => {
  assert.equal(toYAML({ a: '', b: 'true', c: 1, d: 1.5, e: true, f: null, g: ' x ', h: 'a: b', i: 'tab\there', j: 'q"uote' }),
    'a: ""\nb: "true"\nc: 1\nd: 1.5\ne: true\nf: null\ng: " x "\nh: "a: b"\ni: "tab\\there"\nj: q"uote\n');
  assert.equal(toYAML({ 'a: b': 1, '': 2, 'x\ny': 3, yes: 4 }), '"a: b": 1\n"": 2\n"x\\ny": 3\n"yes": 4\n');
  assert.equal(toYAML('just text'), 'just text\n');
  assert.equal(toYAML({ cr: 'a\r\nb' }), 'cr: "a\\r\\nb"\n');
});

test('multi-line strings are literal blocks that keep their final newlines', () => {
  assert.equal(toYAML({ s: 'a\nb' }), 's: |-\n  a\n  b\n');
  assert.equal(toYAML({ s: 'a\nb\n' }), 's: |\n  a\n  b\n');
  assert.equal(toYAML({ s: 'a\n\n' }), 's: |+\n  a\n\n');
  assert.equal(toYAML({ s: 'a\n\nb\n' }), 's: |\n  a\n\n  b\n');
  assert.equal(toYAML({ s: 'a\n  indented # not a comment\n' }), 's: |\n  a\n    indented # not a comment\n');
  // A first line that starts with a blank, or only newlines, are quoted instead.
  assert.equal(toYAML({ s: '  a\nb' }), 's: "  a\\nb"\n');
  assert.equal(toYAML({ s: '\n\n' }), 's: "\\n\\n"\n');
  assert.equal(toYAML({ s: ['x\ny\n'] }), 's:\n  - |\n    x\n    y\n');
});

test('collections: nesting, lists of maps and lists, empty ones', () => {
  const spec = { metadata: { name: 'web', labels: {} }, spec: { ports: [{ name: 'http', port: 80 }, { name: 'dns', port: 53 }], args: [], grid: [[1, 2], []] } };
  assert.equal(toYAML(spec), [
    'metadata:', '  name: web', '  labels: {}',
    'spec:', '  ports:', '    - name: http', '      port: 80', '    - name: dns', '      port: 53',
    '  args: []', '  grid:', '    - - 1', '      - 2', '    - []', ''].join('\n'));
  assert.equal(toYAML([]), '[]\n');
  assert.equal(toYAML({}), '{}\n');
});
