// The project's servers with live status, the create form, and the power
// and delete buttons.
import {call, serverAction} from './api.js';
import {fill, h, link, notice, table, when} from './dom.js';
import {poll} from './poll.js';

const STABLE = new Set(['ACTIVE', 'SHUTOFF', 'ERROR', 'DELETED', 'SOFT_DELETED', 'SHELVED_OFFLOADED']);

export function statusBadge(server) {
  const task = server['OS-EXT-STS:task_state'];
  const busy = task || !STABLE.has(server.status);
  return h('span', {class: `status ${String(server.status).toLowerCase()}${busy ? ' busy' : ''}`,
    'data-status': server.status}, server.status, task ? ` (${task})` : '');
}

export function addresses(server) {
  return Object.entries(server.addresses || {}).map(([net, addrs]) => (
    `${net}: ${addrs.map((a) => a.addr).join(', ')}`)).join('; ');
}

function actionButtons(server, report) {
  const act = (label, run, confirmText) => h('button', {
    type: 'button', class: 'small', 'data-action': label.toLowerCase(),
    onclick: async () => {
      if (confirmText && !window.confirm(confirmText)) return;
      try {
        await run();
        report(null);
      } catch (error) {
        report(`${label} ${server.name}: ${error.message}`);
      }
    },
  }, label);
  const id = server.id;
  return h('td', {class: 'actions'},
    act('Start', () => serverAction(id, {'os-start': null})),
    act('Stop', () => serverAction(id, {'os-stop': null})),
    act('Reboot', () => serverAction(id, {reboot: {type: 'SOFT'}})),
    act('Delete', () => call('compute', `/servers/${encodeURIComponent(id)}`, {method: 'DELETE'}),
      `Delete server ${server.name}?`));
}

function serverRows(list, report) {
  return list.map((s) => [
    link(s.name, 'server', s.id), statusBadge(s), s['OS-EXT-STS:power_state'] === 1 ? 'running' : '',
    addresses(s), (s.flavor && s.flavor.original_name) || '', when(s.created), actionButtons(s, report),
  ]);
}

function options(items, label) {
  return items.map((item) => h('option', {value: item.id}, label(item)));
}

async function createForm(report) {
  const [flavors, images, networks] = await Promise.all([
    call('compute', '/flavors/detail'), call('image', '/v2/images'), call('network', '/v2.0/networks'),
  ]);
  const select = (name, label, items, text) => h('label', {}, label,
    h('select', {name, required: true}, options(items, text)));
  const form = h('form', {id: 'create', class: 'card row'},
    h('label', {}, 'Name', h('input', {name: 'name', required: true, maxlength: 255})),
    select('flavor', 'Flavor', flavors.flavors,
      (f) => `${f.name} (${f.vcpus} vCPU, ${f.ram} MiB, ${f.disk} GiB)`),
    select('image', 'Image', images.images, (i) => i.name || i.id),
    select('network', 'Network', networks.networks, (n) => n.name || n.id),
    h('button', {type: 'submit'}, 'Create server'));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const server = {name: data.get('name'), flavorRef: data.get('flavor'),
      imageRef: data.get('image'), networks: [{uuid: data.get('network')}]};
    try {
      await call('compute', '/servers', {method: 'POST', body: {server}});
      form.reset();
      report(null);
    } catch (error) {
      report(`Create ${server.name}: ${error.message}`);
    }
  });
  return form;
}

export function render(main) {
  const status = h('div', {id: 'servers-status'});
  const formSlot = h('div');
  const listSlot = h('div', {id: 'servers'});
  const report = (message) => fill(status, message ? notice('error', message) : null);
  main.append(h('h1', {}, 'Servers'), formSlot, status, listSlot);
  createForm(report).then((form) => fill(formSlot, form),
    (error) => fill(formSlot, notice('warn', `The create form needs flavors, images and networks: ${error.message}`)));
  return poll(async () => {
    try {
      const list = (await call('compute', '/servers/detail')).servers;
      fill(listSlot, list.length === 0 ? notice('info', 'No servers yet.')
        : table(['Name', 'Status', 'Power', 'Addresses', 'Flavor', 'Created', ''], serverRows(list, report), 'list'));
    } catch (error) {
      fill(listSlot, notice('error', error.message));
    }
  });
}
