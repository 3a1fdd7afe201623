// A boot's waterfall: each event of the create action as a bar from its start
// to its finish, and the scheduler's decision recorded on the schedule event.
import {fill, h, table} from './dom.js';

export const SCHEDULE = 'conductor_schedule_and_build_instances';
const BUILD = 'compute__do_build_and_run_instance';
// The boot steps in pipeline order, with a short name for each.
const STEPS = [
  [SCHEDULE, 'schedule'],
  [BUILD, 'build'],
  ['compute_claim_resources', 'claim'],
  ['compute_allocate_network', 'network'],
  ['compute_prep_block_device', 'block devices'],
  ['compute_spawn', 'spawn'],
  ['compute_wait_for_vif_plugged', 'vif plugged'],
];
const SHORT = new Map(STEPS);
const ORDER = new Map(STEPS.map(([name], i) => [name, i]));

/** An event's details (JSON text since 2.84) as an object; {} when absent or not JSON. */
export function details(event) {
  if (!event.details) return {};
  try {
    const parsed = JSON.parse(event.details);
    return parsed && typeof parsed === 'object' ? parsed : {};
  } catch {
    return {};
  }
}

function millis(value, iso) {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  const parsed = iso ? Date.parse(iso) : NaN;
  return Number.isNaN(parsed) ? null : parsed;
}

/** Bars from events: start/finish in ms (the details' start_ms/finish_ms, else
 * start_time/finish_time); an unfinished event runs to ``now``. */
export function bars(events, now = Date.now()) {
  const out = [];
  for (const event of events) {
    const d = details(event);
    const start = millis(d.start_ms, event.start_time);
    if (start === null) continue;
    const finished = millis(d.finish_ms, event.finish_time);
    const finish = finished === null ? Math.max(now, start) : finished;
    const duration = typeof d.duration_ms === 'number' ? d.duration_ms : finish - start;
    // start_time/finish_time are whole seconds: a duration from them is approximate.
    const coarse = typeof d.start_ms !== 'number' || typeof d.finish_ms !== 'number';
    out.push({event: event.event, name: SHORT.get(event.event) || event.event, start, finish,
      duration, coarse, running: finished === null, result: event.result,
      host: event.host || (event.hostId ? `hostId ${event.hostId.slice(0, 12)}…` : '')});
  }
  const rank = (b) => (ORDER.has(b.event) ? ORDER.get(b.event) : STEPS.length);
  return out.sort((a, b) => a.start - b.start || rank(a) - rank(b));
}

export function formatMs(ms, coarse = false) {
  if (coarse) return ms < 1000 ? '< 1 s' : `~${Math.round(ms / 1000)} s`;
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(ms < 10 ? 1 : 0)} ms`;
}

/** The waterfall of ``events`` (one create action's). */
export function waterfall(events) {
  const list = bars(events);
  if (list.length === 0) return h('p', {class: 'hint'}, 'No timed events yet.');
  const origin = Math.min(...list.map((b) => b.start));
  const span = Math.max(1, Math.max(...list.map((b) => b.finish)) - origin);
  const rows = list.map((b) => {
    const bar = h('span', {class: `bar ${b.running ? 'running' : ''} ${b.result === 'Error' ? 'failed' : ''}`,
      title: `${b.event}: ${formatMs(b.duration, b.coarse)}`});
    bar.style.left = `${((b.start - origin) / span) * 100}%`;
    bar.style.width = `${Math.max(0.5, ((b.finish - b.start) / span) * 100)}%`;
    // The compute's steps run inside the build: drawn lighter and indented under it.
    const inner = b.event !== SCHEDULE && b.event !== BUILD && b.event.startsWith('compute_');
    return h('div', {class: `step${inner ? ' inner' : ''}`, 'data-event': b.event},
      h('span', {class: 'label'}, h('strong', {}, b.name), h('small', {}, b.event)),
      h('span', {class: 'track'}, bar),
      h('span', {class: 'num duration'}, formatMs(b.duration, b.coarse), b.running ? '…' : ''),
      h('span', {class: 'host'}, b.host));
  });
  return h('div', {class: 'waterfall', id: 'waterfall'}, rows,
    h('div', {class: 'axis'}, h('span', {}, '0'), h('span', {}, formatMs(span, list.some((b) => b.coarse)))));
}

/** The scheduler's decision: the filter table and the best weights. */
export function decision(events) {
  const schedule = events.find((e) => e.event === SCHEDULE);
  const d = schedule ? details(schedule) : {};
  if (!Array.isArray(d.filters)) return h('p', {class: 'hint'}, 'No scheduler decision recorded.');
  const slot = h('div', {id: 'decision'});
  const why = (rejected) => Object.entries(rejected || {}).map(([host, reason]) => `${host}: ${reason}`).join('; ');
  fill(slot,
    h('p', {}, `${d.hosts ?? '?'} hosts to choose from, ${d.scanned ?? '?'} looked at.`),
    table(['Filter', 'Hosts in', 'Hosts out', 'Removed', 'Why (some)'], d.filters.map((f) => [
      f.name, h('td', {class: 'num'}, f.hosts_in), h('td', {class: 'num'}, f.hosts_out),
      h('td', {class: 'num'}, f.hosts_in - f.hosts_out), why(f.rejected)]), 'list filters'),
    Array.isArray(d.weighed) && d.weighed.length > 0
      ? table(['Host', 'Weight'], d.weighed.slice(0, 5).map((w) => [
        w.host, h('td', {class: 'num'}, Number(w.weight).toFixed(3))]), 'list weights')
      : null);
  return slot;
}
