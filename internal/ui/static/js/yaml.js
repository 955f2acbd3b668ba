// A small YAML emitter for the spec panes (workload and instance pages): a JSON value as
// block YAML, the way `berth get -o yaml` reads. A string is written plain only when a
// YAML parser (1.1 or 1.2) reads it back as that same string; otherwise it is quoted
// (double quotes, JSON's escapes, which YAML's double-quoted style accepts), or, when it
// spans lines, a literal block scalar with the chomping that keeps its final newlines.

// Words YAML 1.1 or 1.2 reads as null or a boolean, in any of their spellings.
const reserved = /^(~|null|true|false|y|yes|n|no|on|off)$/i;
// What reads as a number, a date or a time: a digit, maybe after a sign or a dot, and
// only the characters numbers, dates and times are made of ("1e3", "0x1F", "2026-11-29",
// "1:20", "1_000"). Such strings are quoted even when they would read as text.
const numberLike = /^[-+.]?[0-9][0-9a-fA-FxXoObB._:+\- ]*$/;
const special = /^[-+]?\.(inf|nan)$/i;
const timestamp = /^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ]|$)/;
// A character that starts YAML syntax when it comes first.
const indicators = '-?:,[]{}#&*!|>\'"%@`=<.';
// Control characters, the byte-order mark, and line or paragraph separators.
const unprintable = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\ufeff\u2028\u2029]/;

// plain reports whether s may be written without quotes.
export function plain(s) {
  if (s === '' || s !== s.trim() || s.includes('\n') || s.includes('\t') || unprintable.test(s)) return false;
  if (indicators.includes(s[0]) && !/^\.[A-Za-z0-9_/]/.test(s) && !/^-[A-Za-z_/]/.test(s)) return false;
  if (s.startsWith('...') || s.startsWith('---')) return false;
  if (s.includes(': ') || s.includes(' #') || s.endsWith(':')) return false;
  return !reserved.test(s) && !numberLike.test(s) && !special.test(s) && !timestamp.test(s);
}

// quoted is s double-quoted with JSON's escapes, and escapes also for what JSON leaves
// as it is but YAML reads otherwise: NEL and the line and paragraph separators are line
// breaks in YAML 1.1, and DEL, the C1 controls and the byte-order mark are not printable.
function quoted(s) {
  return JSON.stringify(s).replace(/[\u007f-\u009f\ufeff\u2028\u2029]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

function scalar(v) {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return plain(v) ? v : quoted(v);
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : 'null';
  return String(v);
}

// block is a multi-line string as a literal block scalar ("|", "|-" or "|+" and its
// lines), or null when it must be quoted: a first line that starts with a blank would
// move the block's indentation, and \r or a control character cannot be written literally.
function block(s) {
  if (!s.includes('\n') || unprintable.test(s) || s.includes('\r')) return null;
  const firstText = s.replace(/^\n+/, '');
  if (firstText === '' || /^[ \t]/.test(firstText)) return null;
  const trailing = s.length - s.replace(/\n+$/, '').length;
  const head = trailing === 0 ? '|-' : trailing === 1 ? '|' : '|+';
  const lines = s.split('\n');
  if (trailing > 0) lines.pop(); // the last break ends the last line
  return { head, lines };
}

const isCollection = (v) => v !== null && typeof v === 'object' && (Array.isArray(v) ? v.length > 0 : Object.keys(v).length > 0);

function key(k) { return k.includes('\n') ? quoted(k) : scalar(k); }

// value is what follows "key:" or "-": the rest of that line and the lines under it,
// indented by ind.
function value(v, ind) {
  const pad = ' '.repeat(ind);
  if (isCollection(v)) return { rest: '', lines: nodeLines(v, ind) };
  if (Array.isArray(v)) return { rest: ' []', lines: [] };
  if (v !== null && typeof v === 'object') return { rest: ' {}', lines: [] };
  if (typeof v === 'string') {
    const b = block(v);
    if (b) return { rest: ' ' + b.head, lines: b.lines.map((l) => (l === '' ? '' : pad + l)) };
  }
  return { rest: ' ' + scalar(v), lines: [] };
}

function nodeLines(v, ind) {
  const pad = ' '.repeat(ind);
  const out = [];
  if (Array.isArray(v)) {
    for (const item of v) {
      if (isCollection(item)) {
        // The item's first line goes after the dash; the rest stay under it.
        const sub = nodeLines(item, ind + 2);
        out.push(`${pad}- ${sub[0].slice(ind + 2)}`, ...sub.slice(1));
      } else {
        const { rest, lines } = value(item, ind + 2);
        out.push(`${pad}-${rest}`, ...lines);
      }
    }
    return out;
  }
  for (const [k, x] of Object.entries(v)) {
    const { rest, lines } = value(x, ind + 2);
    out.push(`${pad}${key(k)}:${rest}`, ...lines);
  }
  return out;
}

// toYAML is v (a value JSON can hold) as a YAML document.
export function toYAML(v) {
  if (isCollection(v)) return nodeLines(v, 0).join('\n') + '\n';
  const { rest, lines } = value(v, 2);
  return [rest.slice(1), ...lines].join('\n') + '\n';
}
