// The cluster: this server, the controllers' leader, etcd's members with their health
// and space, and the space alarms.
import { get } from './api.js';
import { h, badge, errorBox, table, bytes } from './dom.js';

const mb = (n) => (n ? bytes(n) : '');

export async function clusterPage({ main, signal }) {
  const body = h('div', { id: 'cluster' });
  const refresh = h('button', { type: 'button', id: 'refresh' }, 'Refresh');
  main.append(h('h1', {}, 'Cluster ', refresh), body);
  const load = async () => {
    try {
      const c = await get('/v1/cluster', { signal });
      const space = c.space || {};
      body.replaceChildren(
        h('div', { class: 'card' }, h('dl', { class: 'kv' },
          h('dt', {}, 'This server'), h('dd', {}, `${(c.self || {}).id || ''}${(c.self || {}).member ? ' (etcd member ' + c.self.member + ')' : ''}`),
          h('dt', {}, 'Controllers\' leader'), h('dd', { id: 'leader' }, c.leader || h('span', { class: 'badge warn' }, c.leaderError || 'election in progress')),
          h('dt', {}, 'etcd'), h('dd', {}, c.etcd || ''),
          h('dt', {}, 'Space'), h('dd', { id: 'space' }, space.noSpace ? h('span', { class: 'badge bad' }, 'NOSPACE alarm') : h('span', { class: 'badge ok' }, 'ok'),
            space.advice ? h('div', { class: 'reason' }, space.advice) : ''),
          h('dt', {}, 'Last compaction'), h('dd', {}, space.lastCompaction ? `revision ${space.lastCompaction.revision} at ${space.lastCompaction.time}` : 'none yet'))),
        h('h2', {}, 'etcd members'),
        c.membersError ? errorBox(c.membersError) : '',
        table(['Name', 'Health', 'Raft leader', 'Learner', 'Database', 'In use', 'Quota', 'Client URLs', 'Error'],
          (c.members || []).map((m) => h('tr', {},
            h('td', {}, m.name || m.id), h('td', {}, badge(m.healthy ? 'Ready' : 'NotReady')),
            h('td', {}, m.raftLeader ? 'yes' : ''), h('td', {}, m.learner ? 'yes' : ''),
            h('td', {}, mb(m.dbSize)), h('td', {}, mb(m.dbSizeInUse)), h('td', {}, mb(m.dbQuota)),
            h('td', {}, (m.clientURLs || []).join(' ')), h('td', { class: 'error' }, m.error || ''))),
          { id: 'members' }),
        (space.alarms || []).length ? [h('h2', {}, 'Alarms'), table(['Member', 'Alarm'], space.alarms.map((a) => h('tr', {}, h('td', {}, a.member), h('td', {}, a.type))))] : '');
    } catch (err) {
      if (!signal.aborted) body.replaceChildren(errorBox(err));
    }
  };
  refresh.addEventListener('click', load);
  await load();
}
