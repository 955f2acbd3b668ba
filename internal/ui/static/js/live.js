// Live pages: list once, then follow the watch from the list's revision; when the watch
// ends (the server cut a slow reader off, a restart, a compaction) list again and go on.
// Never a periodic re-read of whole lists.
import { APIError } from './api.js';

export function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });
}

// keepWatching runs cycle (a list and its watch) until signal aborts, again after each
// end, waiting longer after failures (up to 10 s). onError shows a failure.
// A broken connection (the browser's network changed, a server restarted) is shown only
// when it lasts: once three tries in a row failed.
export async function keepWatching(signal, cycle, onError) {
  let wait = 500;
  let failures = 0;
  while (!signal.aborted) {
    try {
      await cycle();
      wait = 500;
      failures = 0;
    } catch (err) {
      if (signal.aborted || err.name === 'AbortError') return;
      failures++;
      if (onError && (err instanceof APIError || failures >= 3)) onError(err);
      wait = Math.min(wait * 2, 10000);
    }
    await sleep(wait, signal);
  }
}

// navigate changes the route's query, keeping the path.
export function withParams(params, changes) {
  const p = new URLSearchParams(params);
  for (const [k, v] of Object.entries(changes)) {
    if (v === '' || v === undefined || v === null) p.delete(k);
    else p.set(k, v);
  }
  const path = location.hash.split('?')[0];
  const s = p.toString();
  return s ? `${path}?${s}` : path;
}
