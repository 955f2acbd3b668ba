// The workflow archive as the console shows it (docs/workflows.md, "The workflow
// archive"): the paths of its routes, the console route of an archived workflow's page,
// the actions it offers, its badge's words and its nodes as the graph reads them. Pure
// functions, no DOM (testdata/wfarchive.test.mjs runs them).
import { query } from './api.js';
import { age } from './dom.js';

const enc = encodeURIComponent;

// The archive's list route gives this many a page ("More" reads the next).
export const archivePageSize = 50;

// archivePath is the path of ns's archive, or of its archived workflow name (uid picks
// one of several archived under that name), or of a route under it (sub: '/nodes',
// '/actions/retry'), with the query params.
export function archivePath(ns, name, { uid = '', sub = '', params = {} } = {}) {
  const base = `/v1/namespaces/${enc(ns)}/archivedworkflows`;
  return (name ? `${base}/${enc(name)}${sub}` : base) + query({ ...params, uid });
}

// artifactPath is the path of artifact art of node id: of the stored workflow, or with
// uid of the archived one of that status.uid (the route reads the archive then).
export function artifactPath(ns, name, id, art, uid = '') {
  return `/v1/namespaces/${enc(ns)}/workflows/${enc(name)}/artifacts/${enc(id)}/${enc(art)}` + query({ uid });
}

// archivedHref is the console route of the page of archived workflow ns/name (uid: the
// one of that status.uid, else the one archived last).
export function archivedHref(ns, name, uid = '') {
  const q = new URLSearchParams({ archived: '1' });
  if (uid) q.set('uid', uid);
  return `#/wf/${enc(ns)}/${enc(name)}?${q}`;
}

// archivedActions are the actions an archived workflow of phase offers: a failed one is
// retried (stored again, from its failed steps), any is resubmitted or deleted.
export function archivedActions(phase) {
  return [...(['Failed', 'Error'].includes(phase) ? ['retry'] : []), 'resubmit', 'delete'];
}

// archivedWords are the badge's words for an archive entry ("Archived 3h ago") and its
// title, with the times themselves and the expiry when it has one.
export function archivedWords(entry) {
  const at = (entry || {}).archivedAt;
  const text = at ? `Archived ${age(at)} ago` : 'Archived';
  const title = [at ? `archived at ${at}` : '', entry && entry.expiresAt ? `expires at ${entry.expiresAt}` : 'kept until deleted']
    .filter(Boolean).join('; ');
  return { text, title };
}

// nodeList is an archived workflow's status.nodes (a map by node ID) as the list of
// node statuses the graph reads, each with its id.
export function nodeList(wf) {
  return Object.entries(((wf || {}).status || {}).nodes || {}).map(([id, n]) => ({ ...n, id }));
}
