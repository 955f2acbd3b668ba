// A task's logs, followed as they are written: both streams, or stdout or stderr alone
// (each a fetch of its own), a search that keeps the lines that match, and a download of
// the whole log of the stream chosen. The page keeps the last maxLines lines, so a chatty
// task cannot grow the tab without bound.
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
  const streamName = ['stdout', 'stderr'].includes(params.get('stream')) ? params.get('stream') : '';
  const select = h('select', { id: 'task', onchange: () => { location.hash = withParams(params, { task: select.value }); } },
    tasks.map((t) => h('option', { value: t, selected: t === task }, t)));
  const streams = h('select', { id: 'stream', onchange: () => { location.hash = withParams(params, { stream: streams.value }); } },
    [['', 'stdout and stderr'], ['stdout', 'stdout'], ['stderr', 'stderr']].map(([v, label]) => h('option', { value: v, selected: v === streamName }, label)));
  const search = h('input', { id: 'log-search', type: 'search', placeholder: 'search', oninput: () => render() });
  const matches = h('span', { class: 'muted', id: 'log-matches' });
  const saved = h('span', { class: 'muted', id: 'log-saved' });
  const download = h('button', { id: 'log-download', onclick: () => save() }, 'Download');
  const out = h('pre', { class: 'log', id: 'log' });
  const state = h('span', { class: 'muted', id: 'log-state' }, 'following…');
  const owner = tg.spec.owner || {};
  main.append(h('h1', {}, `Logs of ${ns}/${name}`),
    h('div', { class: 'toolbar' }, h('label', {}, 'Task', select), h('label', {}, 'Stream', streams),
      h('label', {}, 'Search', search), matches, download, saved, state,
      owner.name ? link(`#/w/${owner.kind === 'process' ? 'processes' : owner.kind + 's'}/${encodeURIComponent(ns)}/${encodeURIComponent(owner.name)}`, `back to ${owner.kind} ${owner.name}`) : ''),
    out);
  let pending = '';
  const text = document.createTextNode('');
  out.append(text);
  let lines = 0;
  // render shows the kept lines, or those that hold the search (case-insensitive).
  const render = () => {
    const atBottom = out.scrollTop + out.clientHeight >= out.scrollHeight - 8;
    const needle = search.value.toLowerCase();
    if (!needle) {
      text.data = pending;
      matches.textContent = '';
    } else {
      const kept = pending.split('\n').filter((l) => l.toLowerCase().includes(needle));
      text.data = kept.length ? kept.join('\n') + '\n' : '';
      matches.textContent = `${kept.length} matching line${kept.length === 1 ? '' : 's'}`;
    }
    if (atBottom) out.scrollTop = out.scrollHeight;
  };
  const show = (chunk) => {
    pending += chunk;
    lines += (chunk.match(/\n/g) || []).length;
    if (lines > maxLines) {
      const all = pending.split('\n');
      pending = all.slice(-maxLines).join('\n');
      lines = maxLines;
    }
    render();
  };
  // save downloads the whole log of the stream chosen (no follow, no tail), with the
  // token, as <taskgroup>-<task>-<stream>.log.
  const save = async () => {
    download.disabled = true;
    saved.textContent = 'downloading…';
    try {
      const body = await get(base + '/logs' + query({ task, stream: streamName }), { signal });
      const url = URL.createObjectURL(new Blob([body || ''], { type: 'text/plain' }));
      const a = h('a', { href: url, download: `${name}-${task}-${streamName || 'all'}.log` });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
      saved.textContent = '';
    } catch (err) {
      saved.textContent = signal.aborted ? '' : `download failed: ${err.message}`;
    } finally {
      download.disabled = false;
    }
  };
  // A broken stream (the browser's network changed, a server restarted) is followed again
  // from the log's end, with a mark where lines may be missing.
  let tail = 500;
  let wait = 500;
  for (;;) {
    try {
      await stream(base + '/logs' + query({ task, stream: streamName, follow: 'true', tail }), (chunk) => { wait = 500; show(chunk); }, signal);
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
