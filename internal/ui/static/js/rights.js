// What the token may do, asked of the server (POST /v1/acl/can-i with checks): a page
// shows a control only when the token may use it, as Nomad's console does, so a viewer's
// page has no Scale, Restart or Drain to press and be refused. A control says what it
// needs (need); the page's questions go in one call, asked again when a control asks a
// new one, when the server announces a change of a token or a policy (main.js follows
// them), every 30 s and when the tab comes back into view, so a policy changed meanwhile
// shows without a reload. Until its answer is known a control stays hidden.
import { call } from './api.js';

const maxChecks = 100; // the server's bound on one call
const refreshMs = 30000;

function keyOf(verb, kind, ns) { return `${verb} ${kind} ${ns || ''}`; }

export class Rights {
  constructor(signal) {
    this.signal = signal;
    this.known = new Map(); // question key → allowed
    this.els = new Map(); // element → { key, invert }
    this.asking = null;
    this.again = false;
    this.pending = false;
    // main's data-rights says every question of the page's controls was answered (the UI tests wait on it).
    this.main = document.getElementById('main');
    delete this.main.dataset.rights;
    const timer = setInterval(() => this.refresh(), refreshMs);
    const onVisible = () => { if (document.visibilityState === 'visible') this.refresh(); };
    const onChange = () => this.refresh();
    document.addEventListener('visibilitychange', onVisible);
    window.addEventListener('berth:rights-changed', onChange);
    signal.addEventListener('abort', () => {
      clearInterval(timer);
      document.removeEventListener('visibilitychange', onVisible);
      window.removeEventListener('berth:rights-changed', onChange);
    }, { once: true });
  }

  // need shows el only when the token may do verb on kind in ns (ns '' for the cluster's
  // kinds); with invert, only when it may not (a note saying so). It returns el.
  need(el, verb, kind, ns, { invert = false } = {}) {
    const key = keyOf(verb, kind, ns);
    el.dataset.need = key;
    this.els.set(el, { key, invert });
    this.show(el);
    if (!this.known.has(key)) this.soon();
    return el;
  }

  // may is the known answer for a question: true, false, or undefined while unasked.
  may(verb, kind, ns) { return this.known.get(keyOf(verb, kind, ns)); }

  show(el) {
    const { key, invert } = this.els.get(el);
    const answer = this.known.get(key);
    el.hidden = answer === undefined || answer === invert;
  }

  // soon asks once the current task has registered its controls: a page's rows ask in
  // one call, not one each.
  soon() {
    if (this.pending) return;
    this.pending = true;
    queueMicrotask(() => { this.pending = false; this.refresh(); });
  }

  // refresh asks every question of the page's controls still on it.
  async refresh() {
    if (this.signal.aborted) return;
    if (this.asking) {
      this.again = true;
      return;
    }
    // A control that was on the page and left it (a row replaced) is forgotten; one not
    // yet put on the page is kept.
    for (const [el, v] of this.els) {
      if (el.isConnected) v.seen = true;
      else if (v.seen) this.els.delete(el);
    }
    const keys = [...new Set([...this.els.values()].map((v) => v.key))];
    this.asking = (async () => {
      for (let i = 0; i < keys.length; i += maxChecks) {
        const part = keys.slice(i, i + maxChecks);
        const checks = part.map((k) => { const [verb, kind, ns] = k.split(' '); return { verb, kind, namespace: ns }; });
        try {
          const ans = await call('POST', '/v1/acl/can-i', { checks }, { signal: this.signal, idempotent: true });
          ans.checks.forEach((c, j) => this.known.set(part[j], c.allowed));
        } catch {
          // Unanswered: the controls keep what they showed, and the next refresh asks again.
        }
      }
    })();
    await this.asking;
    this.asking = null;
    for (const el of this.els.keys()) this.show(el);
    const answered = [...this.els.values()].every((v) => this.known.has(v.key));
    if (this.signal.aborted) return;
    if (answered) this.main.dataset.rights = 'known';
    else delete this.main.dataset.rights;
    if (this.again) {
      this.again = false;
      this.refresh();
    }
  }
}
