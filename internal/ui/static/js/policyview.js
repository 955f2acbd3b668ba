// What the cluster policy pages compute (docs/policy.md): a namespace's quota beside its
// usage, its limit defaults, a webhook's type, rules and selectors in words, and what a
// node lends to the revocable tier. Pure functions, no page, so node's test runner checks
// them (internal/ui/testdata/policyview.test.mjs).
import { bytes } from './dom.js';

// quotaNames are the resources a quota bounds, in the order `berth quota get` shows them
// (internal/quota.Names).
export const quotaNames = ['cpu', 'memory', 'disk', 'gpu', 'vcuda-core', 'vcuda-memory', 'instances'];

// hotRatio is the share of a limit from which a resource is highlighted.
export const hotRatio = 0.9;

// amount writes an amount of a quota's resource as the CLI does (internal/quota.Format):
// at most three decimals, memory and disk in MB; bytes in the unit that suits them.
export function amount(name, v) {
  if (!Number.isFinite(v)) return '';
  if (name === 'bytes') return bytes(v);
  const s = String(Math.round(v * 1000) / 1000);
  return name === 'memory' || name === 'disk' ? `${s}MB` : s;
}

// level says how full a resource is: '' without a limit; 'ok' below hotRatio of it;
// 'hot' at or above it; 'over' past it (a quota set below the usage with force). A limit
// of 0 forbids the resource: 'ok' while none is used.
export function level(used, limit) {
  if (limit === null || limit === undefined) return '';
  if (limit <= 0) return used > 0 ? 'over' : 'ok';
  const r = used / limit;
  return r > 1 ? 'over' : r >= hotRatio ? 'hot' : 'ok';
}

// percent is used as a whole percentage of limit (null without a positive limit).
export function percent(used, limit) {
  if (!(limit > 0)) return null;
  return Math.round((used / limit) * 100);
}

// quotaRows are a namespace's quota (GET /v1/namespaces/NS/quota) as rows: each
// resource's use beside its limit (null: not bounded), then the objects and bytes the
// namespace may store.
export function quotaRows(q) {
  const limits = (q && q.limits) || {};
  const hard = limits.resources || {};
  const used = (q && q.resourceUsage) || {};
  const stored = (q && q.usage) || {};
  const row = (name, u, limit) => ({
    name, used: u, limit, usedText: amount(name, u), limitText: limit === null ? 'no limit' : amount(name, limit),
    percent: percent(u, limit), level: level(u, limit),
  });
  const rows = quotaNames.map((k) => row(k, used[k] || 0, Object.hasOwn(hard, k) ? hard[k] : null));
  rows.push(row('objects', stored.objects || 0, limits.objects > 0 ? limits.objects : null));
  rows.push(row('bytes', stored.bytes || 0, limits.bytes > 0 ? limits.bytes : null));
  return rows;
}

// defaultRows are a namespace's limit defaults as rows [resource, default request,
// default limit, max] ('-' where unset), for the resources any of them names.
export function defaultRows(d) {
  if (!d) return [];
  const cell = (l, k) => (l && Object.hasOwn(l, k) ? amount(k, l[k]) : '-');
  return quotaNames.filter((k) => k !== 'instances')
    .map((k) => [k, cell(d.defaultRequests, k), cell(d.defaultLimits, k), cell(d.max, k)])
    .filter((r) => r.slice(1).some((c) => c !== '-'));
}

// hooksOf are a webhook configuration's hooks, whichever shape holds them (Kubernetes'
// webhooks or BCS's admissionWebhooks).
export function hooksOf(cfg) {
  return (cfg.webhooks && cfg.webhooks.length ? cfg.webhooks : cfg.admissionWebhooks) || [];
}

// hookType is a hook's type, defaulted from its document's kind (api/v4.HookType).
export function hookType(cfg, hook) {
  if (hook.type) return hook.type;
  return cfg.kind === 'ValidatingWebhookConfiguration' ? 'Validating' : 'Mutating';
}

export const failurePolicy = (hook) => hook.failurePolicy || 'Fail';
export const timeoutText = (hook) => `${hook.timeoutSeconds ?? 10}s`;

// rulesText are what a hook applies to, one string a rule: "CREATE,UPDATE on
// application,deploy*"; BCS's resourcesRef is the configuration's one rule.
export function rulesText(cfg, hook) {
  if (cfg.resourcesRef) return [`${cfg.resourcesRef.operation} on ${cfg.resourcesRef.kind}`];
  return (hook.rules || []).map((r) => `${(r.operations || []).join(',')} on ${[...(r.kinds || []), ...(r.resources || [])].join(',')}`);
}

function expressions(sel) {
  const out = Object.entries(sel.matchLabels || {}).map(([k, v]) => `${k}=${v}`);
  for (const e of sel.matchExpressions || []) {
    out.push(e.values && e.values.length ? `${e.key} ${e.operator} (${e.values.join(', ')})` : `${e.key} ${e.operator}`);
  }
  return out;
}

// selectorText writes a namespace or object selector: BCS's "NotIn infra, kube-*", or
// Kubernetes' labels and expressions; everything is selected without one.
export function selectorText(sel, everything = 'all') {
  if (!sel) return everything;
  const out = [];
  if (sel.operator) out.push(`${sel.operator} ${(sel.values || []).join(', ')}`);
  out.push(...expressions(sel));
  return out.length ? out.join('; ') : everything;
}

// nodeLends is what a node lends, as the server's scheduler reckons it (the nodes list's
// usage.lends, internal/scheduler/revocable.go): null without a report; { stale } when
// the report is too old to lend anything (no lends in the usage); else the cores and MB
// lent, what revocable task groups reserve there, and how many the agent evicted. usage
// is the node's entry of the nodes list's usage.
export function nodeLends(node, usage) {
  const r = (node.status || {}).revocable;
  if (!r) return null;
  const u = usage || {};
  if (!u.lends) return { stale: true };
  return {
    stale: false,
    cpu: u.lends.cpu || 0,
    memoryMB: u.lends.memoryMB || 0,
    revocableCPU: u.revocableCPU || 0,
    revocableMemoryMB: u.revocableMemoryMB || 0,
    evictions: r.evictions || 0,
  };
}

// lendsText is nodeLends in words.
export function lendsText(l) {
  if (!l) return 'nothing (no report)';
  if (l.stale) return 'nothing (report stale)';
  let s = `${amount('cpu', l.cpu)} cores, ${amount('memory', l.memoryMB)}`;
  if (l.revocableCPU || l.revocableMemoryMB) s += `; revocable reserve ${amount('cpu', l.revocableCPU)} cores, ${amount('memory', l.revocableMemoryMB)}`;
  if (l.evictions) s += `; ${l.evictions} evicted`;
  return s;
}

// tierText is a workload's tier (spec.tier): revocable, or guaranteed when it names none.
export const tierText = (spec) => ((spec || {}).tier === 'revocable' ? 'revocable' : 'guaranteed');

// priorityText is a workload's priority as `berth describe` writes it: "1000 (batch,
// PreemptLowerPriority)"; '' for one without a class or a value.
export function priorityText(spec) {
  const s = spec || {};
  if (s.priority === undefined && !s.priorityClassName) return '';
  return `${s.priority ?? 0} (${s.priorityClassName || 'default'}, ${s.preemptionPolicy || 'PreemptLowerPriority'})`;
}
