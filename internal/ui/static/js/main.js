// The console's router: one page per route of the URL's fragment. Leaving a page aborts
// everything it started (its requests and watch streams).
import { token, signOut, get, call, watch } from './api.js';
import { clear, errorBox } from './dom.js';
import { signinPage } from './signin.js';
import { workloadsPage } from './workloads.js';
import { workloadPage } from './workload.js';
import { logsPage } from './logs.js';
import { execPage } from './exec.js';
import { nodesPage } from './nodes.js';
import { clusterPage } from './cluster.js';
import { Rights } from './rights.js';
import { keepWatching } from './live.js';

// The instance page (and its usage graphs), services, config, events and policy are loaded when
// opened: the workloads pages' first paint (docs/benchmarks.md, "Web console") fetches
// none of them.
const instancePage = async (ctx) => (await import('./instance.js')).instancePage(ctx);
const servicesPage = async (ctx) => (await import('./services.js')).servicesPage(ctx);
const configmapsPage = async (ctx) => (await import('./config.js')).configmapsPage(ctx);
const secretsPage = async (ctx) => (await import('./config.js')).secretsPage(ctx);
const configmapPage = async (ctx) => (await import('./config.js')).configmapPage(ctx);
const eventsPage = async (ctx) => (await import('./events.js')).eventsPage(ctx);
const batch = (page) => async (ctx) => (await import('./batch.js'))[page](ctx);
const workflowPage = async (ctx) => (await import('./workflow.js')).workflowPage(ctx);
const policy = (page) => async (ctx) => (await import('./policy.js'))[page](ctx);

const routes = [
  [/^#\/signin$/, signinPage, ''],
  [/^#\/workloads$/, workloadsPage, 'workloads'],
  [/^#\/w\/([^/]+)\/([^/]+)\/([^/]+)$/, workloadPage, 'workloads'],
  [/^#\/logs\/([^/]+)\/([^/]+)$/, logsPage, 'workloads'],
  [/^#\/exec\/([^/]+)\/([^/]+)$/, execPage, 'workloads'],
  [/^#\/taskgroup\/([^/]+)\/([^/]+)$/, instancePage, 'workloads'],
  [/^#\/services$/, servicesPage, 'services'],
  [/^#\/configmaps$/, configmapsPage, 'config'],
  [/^#\/secrets$/, secretsPage, 'config'],
  [/^#\/configmap\/([^/]+)\/([^/]+)$/, configmapPage, 'config'],
  [/^#\/events$/, eventsPage, 'events'],
  [/^#\/workflows$/, batch('workflowsPage'), 'batch'],
  [/^#\/jobs$/, batch('jobsPage'), 'batch'],
  [/^#\/cronjobs$/, batch('cronjobsPage'), 'batch'],
  [/^#\/wf\/([^/]+)\/([^/]+)$/, workflowPage, 'batch'],
  [/^#\/job\/([^/]+)\/([^/]+)$/, batch('jobPage'), 'batch'],
  [/^#\/cronjob\/([^/]+)\/([^/]+)$/, batch('cronjobPage'), 'batch'],
  [/^#\/nodes$/, nodesPage, 'nodes'],
  [/^#\/cluster$/, clusterPage, 'cluster'],
  [/^#\/namespaces$/, policy('namespacesPage'), 'policy'],
  [/^#\/namespace\/([^/]+)$/, policy('namespacePage'), 'policy'],
  [/^#\/priorityclasses$/, policy('priorityClassesPage'), 'policy'],
  [/^#\/admissionwebhooks$/, policy('webhooksPage'), 'policy'],
  [/^#\/admissionwebhook\/([^/]+)$/, policy('webhookPage'), 'policy'],
];

let current = null;

// The token's rights are followed while signed in: the server announces each change of
// a token or a policy (GET /v1/acl/whoami?watch=true), and the tabs and the page's
// controls are asked again at once instead of at their next 30 s refresh. A stream that
// broke and came back counts as a change: one may have been missed meanwhile.
let rightsFollow = null;

function followRights() {
  if (rightsFollow) rightsFollow.abort();
  rightsFollow = null;
  if (!token()) return;
  const ctl = new AbortController();
  rightsFollow = ctl;
  let connected = false;
  keepWatching(ctl.signal, async () => {
    let first = true;
    await watch('/v1/acl/whoami?watch=true', () => {
      const announce = !first || connected;
      first = false;
      connected = true;
      if (!announce) return;
      sessionStorage.removeItem(tabsKey);
      showTabs();
      window.dispatchEvent(new Event('berth:rights-changed'));
    }, ctl.signal);
  });
}

async function showWho() {
  followRights();
  const who = document.getElementById('who');
  const out = document.getElementById('signout');
  // Signed out, there is nothing the tabs could show.
  document.getElementById('nav').hidden = !token();
  if (!token()) {
    who.textContent = '';
    out.hidden = true;
    return;
  }
  out.hidden = false;
  try {
    const me = await get('/v1/acl/whoami');
    who.textContent = me.management ? `${me.name || me.token} (management)` : (me.name || me.token || '');
  } catch {
    who.textContent = '';
  }
}

// The tabs a token may open: Nodes needs read on node, Cluster read on cluster. Asked
// at navigation when the last answer (kept in the tab) is older than 30 s, so a policy
// changed meanwhile shows on a later click, and a page load does not wait behind it.
const tabNeeds = { nodes: 'node', cluster: 'cluster' };
const tabsKey = 'berth.tabs'; // cleared with the token (api.js)
const tabsFresh = 30000;

function applyTabs(allowed) {
  for (const [page, ok] of Object.entries(allowed)) document.querySelector(`#nav a[data-page="${page}"]`).hidden = !ok;
}

async function showTabs() {
  if (!token()) return;
  const kept = JSON.parse(sessionStorage.getItem(tabsKey) || 'null');
  if (kept) applyTabs(kept.allowed);
  if (kept && Date.now() - kept.at < tabsFresh) return;
  const pages = Object.keys(tabNeeds);
  try {
    const ans = await call('POST', '/v1/acl/can-i', { checks: pages.map((p) => ({ verb: 'read', kind: tabNeeds[p] })) }, { idempotent: true });
    const allowed = Object.fromEntries(pages.map((p, i) => [p, ans.checks[i].allowed]));
    sessionStorage.setItem(tabsKey, JSON.stringify({ at: Date.now(), allowed }));
    applyTabs(allowed);
  } catch {
    // The tabs stay as they were; the pages say what the server refuses.
  }
}

function route() {
  const [path, qs] = (location.hash || '#/workloads').split('?');
  if (!token() && path !== '#/signin') {
    location.hash = '#/signin';
    return;
  }
  let page = null;
  let args = [];
  let section = '';
  for (const [re, fn, sec] of routes) {
    const m = path.match(re);
    if (m) {
      page = fn;
      args = m.slice(1).map(decodeURIComponent);
      section = sec;
      break;
    }
  }
  if (!page) {
    location.hash = '#/workloads';
    return;
  }
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('current', a.dataset.page === section);
  showTabs();
  if (current) current.abort();
  current = new AbortController();
  const signal = current.signal;
  const main = clear(document.getElementById('main'));
  page({ main, args, params: new URLSearchParams(qs || ''), signal, rights: new Rights(signal) }).catch((err) => {
    if (!signal.aborted && err.name !== 'AbortError') main.append(errorBox(err));
  });
}

window.addEventListener('hashchange', route);
window.addEventListener('berth:signed-in', showWho);
window.addEventListener('berth:unauthorized', () => {
  signOut();
  showWho();
  location.hash = '#/signin';
});
document.getElementById('signout').addEventListener('click', () => {
  signOut();
  showWho();
  location.hash = '#/signin';
});
showWho();
route();
