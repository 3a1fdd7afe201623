// The project's quotas and what it uses of each (os-quota-sets/{project}/detail).
import {call, session} from './api.js';
import {fill, h, meter, notice, table} from './dom.js';
import {poll} from './poll.js';

function rows(quotaSet) {
  return Object.entries(quotaSet).filter(([name, q]) => name !== 'id' && q && typeof q === 'object')
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, q]) => [name, h('td', {class: 'num'}, q.in_use), h('td', {class: 'num'}, q.reserved),
      h('td', {class: 'num'}, q.limit < 0 ? 'unlimited' : q.limit),
      q.limit < 0 ? '' : meter(q.in_use, q.limit)]);
}

export function render(main) {
  const saved = session();
  const slot = h('div', {id: 'quotas'});
  main.append(h('h1', {}, `Quotas of project ${saved.project}`), slot);
  return poll(async () => {
    try {
      const answer = await call('compute', `/os-quota-sets/${encodeURIComponent(saved.projectId)}/detail`);
      fill(slot, table(['Resource', 'In use', 'Reserved', 'Limit', ''], rows(answer.quota_set), 'list'));
    } catch (error) {
      fill(slot, notice('error', error.message));
    }
  }, 5000);
}
