// One server: its state, fault, boot waterfall with the scheduler's filter
// table, and console log.
import {call, serverAction} from './api.js';
import {fill, h, notice, table, when} from './dom.js';
import {poll} from './poll.js';
import {addresses, statusBadge} from './servers.js';
import {decision, waterfall} from './waterfall.js';

const CONSOLE_LINES = 100;

function facts(server) {
  const host = server['OS-EXT-SRV-ATTR:host'];
  return table(['', ''], [
    ['Status', statusBadge(server)],
    ['ID', server.id],
    ['Host', host || (server.hostId ? `hostId ${server.hostId}` : '')],
    ['Flavor', (server.flavor && server.flavor.original_name) || ''],
    ['Image', (server.image && server.image.id) || 'volume'],
    ['Addresses', addresses(server)],
    ['Created', when(server.created)],
  ], 'facts');
}

function fault(server) {
  const f = server.fault;
  if (!f) return null;
  return h('section', {class: 'card fault', id: 'fault'}, h('h2', {}, 'Fault'),
    h('p', {}, h('strong', {}, f.message), ` (code ${f.code}, ${when(f.created)})`),
    f.details ? h('pre', {}, f.details) : null);
}

async function createEvents(id) {
  const base = `/servers/${encodeURIComponent(id)}/os-instance-actions`;
  const actions = (await call('compute', base)).instanceActions;
  const create = actions.find((a) => a.action === 'create');
  if (!create) return null;
  return (await call('compute', `${base}/${encodeURIComponent(create.request_id)}`)).instanceAction.events;
}

async function consoleLog(id) {
  try {
    const answer = await serverAction(id, {'os-getConsoleOutput': {length: CONSOLE_LINES}});
    return h('pre', {class: 'console', id: 'console'}, answer.output || '(empty)');
  } catch (error) {
    return notice('info', `No console log: ${error.message}`);
  }
}

// Sections are refilled only when their data changed, so reading (or
// selecting text in) the page is not disturbed every poll.
function changed(slot, data) {
  const key = JSON.stringify(data);
  if (slot.dataset.key === key) return false;
  slot.dataset.key = key;
  return true;
}

export function render(main, id) {
  const title = h('h1', {}, 'Server');
  const slots = {facts: h('div'), fault: h('div'), boot: h('div'), decision: h('div'), console: h('div')};
  main.append(h('p', {}, h('a', {href: '#/servers'}, '← Servers')), title, slots.facts, slots.fault,
    h('section', {class: 'card'}, h('h2', {}, 'Boot waterfall'), slots.boot),
    h('section', {class: 'card'}, h('h2', {}, 'Scheduler decision'), slots.decision),
    h('section', {class: 'card'}, h('h2', {}, 'Console log'), slots.console));
  return poll(async () => {
    let server;
    try {
      server = (await call('compute', `/servers/${encodeURIComponent(id)}`)).server;
    } catch (error) {
      fill(slots.facts, notice('error', error.message));
      return;
    }
    title.textContent = `Server ${server.name}`;
    if (changed(slots.facts, server)) {
      fill(slots.facts, facts(server));
      fill(slots.fault, fault(server));
    }
    const events = await createEvents(id).catch((error) => error);
    if (events instanceof Error) {
      fill(slots.boot, notice('error', events.message));
    } else if (changed(slots.boot, events)) {
      fill(slots.boot, events ? waterfall(events) : h('p', {class: 'hint'}, 'No create action recorded.'));
      fill(slots.decision, decision(events || []));
    }
    const log = await consoleLog(id);
    if (changed(slots.console, log.textContent)) fill(slots.console, log);
  });
}
