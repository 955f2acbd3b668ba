// A task's logs, followed as they are written. The page keeps the last maxLines lines,
// so a chatty task cannot grow the tab without bound.
import { APIError, get, stream, query, taskNames } from './api.js';
import { h, link, errorBox } from './dom.js';
import { sleep, withParams } from './live.js';

const maxLines = 5000;

export async function logsPage({ main, args, params, signal }) {
  const [ns, name] = args;
  const base = `/v1/namespaces/${encodeURIComponent(ns)}/taskgroups/${encodeURIComponent(name)}`;
  const tg = await get(base, { signal });
  const tasks = taskNames(tg);
  const task = params.get('task') || tasks[0] || '';
  const select = h('select', { id: 'task', onchange: () => { location.hash = withParams(params, { task: select.value }); } },
    tasks.map((t) => h('option', { value: t, selected: t === task }, t)));
  const out = h('pre', { class: 'log', id: 'log' });
  const state = h('span', { class: 'muted', id: 'log-state' }, 'following…');
  const owner = tg.spec.owner || {};
  main.append(h('h1', {}, `Logs of ${ns}/${name}`),
    h('div', { class: 'toolbar' }, h('label', {}, 'Task', select), state,
      owner.name ? link(`#/w/${owner.kind === 'process' ? 'processes' : owner.kind + 's'}/${encodeURIComponent(ns)}/${encodeURIComponent(owner.name)}`, `back to ${owner.kind} ${owner.name}`) : ''),
    out);
  let pending = '';
  const text = document.createTextNode('');
  out.append(text);
  let lines = 0;
  const show = (chunk) => {
    pending += chunk;
    lines += (chunk.match(/\n/g) || []).length;
    if (lines > maxLines) {
      const all = pending.split('\n');
      pending = all.slice(-maxLines).join('\n');
      lines = maxLines;
    }
    const atBottom = out.scrollTop + out.clientHeight >= out.scrollHeight - 8;
    text.data = pending;
    if (atBottom) out.scrollTop = out.scrollHeight;
  };
  // A broken stream (the browser's network changed, a server restarted) is followed again
  // from the log's end, with a mark where lines may be missing.
  let tail = 500;
  let wait = 500;
  for (;;) {
    try {
      await stream(base + '/logs' + query({ task, follow: 'true', tail }), (chunk) => { wait = 500; show(chunk); }, signal);
      state.textContent = 'the log ended';
      return;
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof APIError) {
        state.textContent = '';
        main.append(errorBox(err));
        return;
      }
      show(`\n[the log stream broke (${err.message}); following again]\n`);
      tail = 0;
      await sleep(wait, signal);
      wait = Math.min(wait * 2, 10000);
      if (signal.aborted) return;
    }
  }
}
