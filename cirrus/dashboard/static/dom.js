// Building the page from data without ever parsing data as HTML: every datum
// becomes a text node (textContent), so nothing a user named a server can run.

/** An element: h('td', {class: 'num'}, 'text', childNode, …). Props starting
 * with "on" become listeners; others attributes (never "style": the content
 * security policy forbids inline styles; set element.style from code). */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else if (key === 'class') el.className = value;
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace what ``el`` holds with ``children``. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A link to a page of the dashboard; the id is encoded into the hash. */
export function link(text, page, id) {
  return h('a', {href: `#/${page}/${encodeURIComponent(id)}`}, text);
}

/** A message box: kind is "error", "info" or "warn". */
export function notice(kind, ...text) {
  return h('p', {class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status'}, ...text);
}

/** A bar showing used of total (a meter that CSS can colour). */
export function meter(used, total) {
  const bar = h('span', {class: 'fill'});
  const share = total > 0 ? Math.min(1, used / total) : 0;
  bar.style.width = `${(share * 100).toFixed(1)}%`;
  bar.classList.toggle('high', share >= 0.9);
  return h('span', {class: 'meter', title: `${used} of ${total}`}, bar);
}

/** A table with a header row and body rows (arrays of cells). */
export function table(headers, rows, cls = '') {
  return h('table', {class: cls},
    h('thead', {}, h('tr', {}, headers.map((name) => h('th', {scope: 'col'}, name)))),
    h('tbody', {}, rows.map((cells) => h('tr', {}, cells.map((c) => (
      c instanceof Node && c.nodeName === 'TD' ? c : h('td', {}, c)))))));
}

export function when(iso) {
  if (!iso) return '';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : date.toLocaleString();
}
