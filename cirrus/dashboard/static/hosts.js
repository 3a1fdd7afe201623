// The compute hosts and their usage (os-hypervisors/detail): admins only, as
// the API's policy says; anyone else is told so.
import {call, session} from './api.js';
import {fill, h, meter, notice, table} from './dom.js';
import {poll} from './poll.js';

function usage(used, total, unit) {
  return h('td', {class: 'usage'}, meter(used, total), ` ${used} / ${total} ${unit}`);
}

function rows(hypervisors) {
  return hypervisors.map((hv) => [
    hv.hypervisor_hostname, `${hv.state} / ${hv.status}`,
    usage(hv.vcpus_used, hv.vcpus, 'vCPU'), usage(hv.memory_mb_used, hv.memory_mb, 'MiB'),
    usage(hv.local_gb_used, hv.local_gb, 'GiB'), h('td', {class: 'num'}, hv.running_vms),
  ]);
}

export function render(main) {
  const slot = h('div', {id: 'hosts'});
  main.append(h('h1', {}, 'Hosts'), slot);
  return poll(async () => {
    try {
      const list = (await call('compute', '/os-hypervisors/detail')).hypervisors;
      fill(slot, table(['Host', 'State', 'vCPUs', 'RAM', 'Disk', 'Running VMs'], rows(list), 'list'));
    } catch (error) {
      const saved = session();
      fill(slot, error.status === 403
        ? notice('warn', 'Hosts and their usage are shown to administrators only; your roles in project ',
          saved ? saved.project : '?', ' are: ', saved ? saved.roles.join(', ') : 'none', '.')
        : notice('error', error.message));
    }
  }, 5000);
}
