// The console's client of berth's API (docs/api.md). Every call carries the token the
// user signed in with; the console has no rights of its own.

const tokenKey = 'berth.token';

export function token() { return sessionStorage.getItem(tokenKey) || ''; }
// What the tab keeps about the signed-in token (main.js's tabs) goes with it.
const tokenKept = ['berth.tabs'];
export function setToken(t) { tokenKept.forEach((k) => sessionStorage.removeItem(k)); sessionStorage.setItem(tokenKey, t.trim()); }
export function signOut() { [tokenKey, ...tokenKept].forEach((k) => sessionStorage.removeItem(k)); }

// APIError is an answer that is not 2xx: its status and the server's message.
export class APIError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function headers(extra) {
  const h = { Accept: 'application/json', ...extra };
  if (token()) h.Authorization = 'Bearer ' + token();
  return h;
}

async function failure(resp) {
  let msg = resp.status + ' ' + resp.statusText;
  try {
    const body = await resp.json();
    if (body && body.error && body.error.message) msg = body.error.message;
  } catch { /* not JSON */ }
  if (resp.status === 401) window.dispatchEvent(new CustomEvent('berth:unauthorized', { detail: msg }));
  return new APIError(resp.status, msg);
}

// call makes one request; a JSON answer is decoded, text returned as text, 204 as null.
// body: an object (sent as JSON) or a string (sent as YAML, as berth apply does); opts:
// signal, and idempotent for a POST that may be sent twice.
// A request that failed before any answer (the browser's network changed, a connection
// broke) is sent again, twice at most, when sending it twice changes nothing: GET, PUT,
// PATCH, DELETE, or a POST its caller says is idempotent (a scale to N, a pause).
const retries = 2;

function idempotent(method, opts) {
  return opts.idempotent || ['GET', 'PUT', 'PATCH', 'DELETE'].includes(method);
}

async function send(method, path, init, opts) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fetch(path, init);
    } catch (err) {
      if (err.name === 'AbortError' || attempt >= retries || !idempotent(method, opts)) throw err;
      await new Promise((resolve) => setTimeout(resolve, 250 * (attempt + 1)));
      if (init.signal && init.signal.aborted) throw err;
    }
  }
}

export async function call(method, path, body, opts = {}) {
  const { signal } = opts;
  const extra = {};
  let payload;
  if (typeof body === 'string') {
    extra['Content-Type'] = 'application/yaml';
    payload = body;
  } else if (body !== undefined) {
    extra['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  const resp = await send(method, path, { method, headers: headers(extra), body: payload, signal }, opts);
  if (!resp.ok) throw await failure(resp);
  if (resp.status === 204) return null;
  const type = resp.headers.get('Content-Type') || '';
  return type.includes('json') ? resp.json() : resp.text();
}

export const get = (path, opts) => call('GET', path, undefined, opts);

// lines reads a streaming answer (a watch's NDJSON, a followed log) and hands each piece
// of text to onText as it arrives, until the stream ends or signal aborts.
export async function stream(path, onText, signal) {
  const resp = await fetch(path, { headers: headers({ Accept: '*/*' }), signal });
  if (!resp.ok) throw await failure(resp);
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    onText(value);
  }
}

// watch streams the events of a watch URL (docs/api.md, Watch) to onEvent. It returns
// when the stream ends: after an ERROR line (410: the caller lists again) or when the
// server closed it.
export async function watch(path, onEvent, signal) {
  let buf = '';
  await stream(path, (text) => {
    buf += text;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      if (line) onEvent(JSON.parse(line));
    }
  }, signal);
}

// Plurals of the kinds the console lists, and their kind names.
export const workloadKinds = {
  applications: 'application', processes: 'process', deployments: 'deployment', daemonsets: 'daemonset',
};

export function objectPath(plural, ns, name) {
  const base = ns ? `/v1/namespaces/${encodeURIComponent(ns)}/${plural}` : `/v1/${plural}`;
  return name ? `${base}/${encodeURIComponent(name)}` : base;
}

export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, v);
  }
  const s = q.toString();
  return s ? '?' + s : '';
}

// taskNames are the names of a task group's tasks: its containers', then its processes'.
export function taskNames(tg) {
  const spec = (tg.spec.template || {}).spec || {};
  return [...(spec.containers || []).map((c) => c.name), ...(spec.processes || []).map((p) => p.procName)].filter(Boolean);
}
