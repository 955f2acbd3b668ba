// A terminal in a running task: xterm.js over a WebSocket the server relays to the exec
// stream of the task's agent (docs/ui.md). Each binary message is one frame of that stream:
// a type byte, a big-endian uint32 length, the payload.
import { get, taskNames, token } from './api.js';
import { h, errorBox } from './dom.js';

const frameStdin = 0;
const frameStdout = 1;
const frameResize = 2;
const frameExit = 4;

function frame(type, payload) {
  const out = new Uint8Array(5 + payload.length);
  out[0] = type;
  new DataView(out.buffer).setUint32(1, payload.length);
  out.set(payload, 5);
  return out;
}

function base64url(s) {
  const bytes = new TextEncoder().encode(s);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export async function execPage({ main, args, params, signal, rights }) {
  const [ns, name] = args;
  const base = `/v1/namespaces/${encodeURIComponent(ns)}/taskgroups/${encodeURIComponent(name)}`;
  const tg = await get(base, { signal });
  const tasks = taskNames(tg);
  const taskSelect = h('select', { id: 'task' }, tasks.map((t) => h('option', { value: t, selected: t === params.get('task') }, t)));
  const cmd = h('input', { id: 'command', value: params.get('cmd') || '/bin/sh', size: 30 });
  const connect = rights.need(h('button', { type: 'button', class: 'primary', id: 'connect' }, 'Connect'), 'exec', 'taskgroup', ns);
  const cannot = rights.need(h('span', { class: 'muted', id: 'exec-refused' }, 'This token may not run commands in this namespace\'s task groups (it lacks exec on taskgroup).'),
    'exec', 'taskgroup', ns, { invert: true });
  const state = h('span', { class: 'muted', id: 'exec-state' });
  const screen = h('div', { id: 'terminal' });
  const problem = h('div');
  main.append(h('h1', {}, `Exec in ${ns}/${name}`),
    h('div', { class: 'toolbar' }, h('label', {}, 'Task', taskSelect), h('label', {}, 'Command', cmd), connect, cannot, state),
    problem, screen);

  if (!window.Terminal || !window.FitAddon) throw new Error('the terminal did not load');
  const term = new window.Terminal({ convertEol: false, cursorBlink: true, fontSize: 14 });
  const fit = new window.FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open(screen);
  fit.fit();
  window.berthTerminal = term; // the UI tests read the screen through it
  let ws = null;
  const encoder = new TextEncoder();
  const send = (type, payload) => { if (ws && ws.readyState === WebSocket.OPEN) ws.send(frame(type, payload)); };
  const resize = () => send(frameResize, encoder.encode(JSON.stringify({ rows: term.rows, cols: term.cols })));
  term.onData((d) => send(frameStdin, encoder.encode(d)));
  term.onResize(resize);
  const onWindowResize = () => fit.fit();
  window.addEventListener('resize', onWindowResize);
  signal.addEventListener('abort', () => {
    window.removeEventListener('resize', onWindowResize);
    if (ws) ws.close();
    term.dispose();
  }, { once: true });

  connect.addEventListener('click', () => {
    if (ws) ws.close();
    problem.replaceChildren();
    term.reset();
    const q = new URLSearchParams({ tty: 'true' });
    for (const arg of cmd.value.trim().split(/\s+/).filter(Boolean)) q.append('cmd', arg);
    if (taskSelect.value) q.set('task', taskSelect.value);
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    ws = new WebSocket(`${scheme}//${location.host}${base}/exec/ws?${q}`, ['berth-exec.v1', 'berth.bearer.' + base64url(token())]);
    ws.binaryType = 'arraybuffer';
    state.textContent = 'connecting…';
    ws.onopen = () => {
      state.textContent = 'connected';
      resize();
      term.focus();
    };
    ws.onmessage = (ev) => {
      const data = new Uint8Array(ev.data);
      if (data.length < 5) return;
      const payload = data.subarray(5, 5 + new DataView(data.buffer).getUint32(1));
      if (data[0] === frameStdout) {
        term.write(payload);
      } else if (data[0] === frameExit) {
        const exit = JSON.parse(new TextDecoder().decode(payload));
        state.textContent = exit.error ? `ended: ${exit.error}` : `exited with code ${exit.code}`;
      }
    };
    ws.onclose = (ev) => {
      if (!state.textContent.startsWith('exited') && !state.textContent.startsWith('ended')) {
        state.textContent = ev.code === 1000 ? 'closed' : `closed (${ev.code}${ev.reason ? ': ' + ev.reason : ''})`;
      }
    };
    ws.onerror = () => problem.replaceChildren(errorBox(new Error('the exec connection failed: is the task running, and may this token exec?')));
  });
  if (params.get('connect') === 'true' && rights.may('exec', 'taskgroup', ns) !== false) connect.click();
}
