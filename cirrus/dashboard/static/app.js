// The dashboard's router: #/login, #/servers, #/server/<id>, #/hosts, #/quotas.
import {logout, session} from './api.js';
import {fill} from './dom.js';
import * as hosts from './hosts.js';
import * as login from './login.js';
import * as quotas from './quotas.js';
import * as server from './server.js';
import * as servers from './servers.js';

const PAGES = {login, servers, server, hosts, quotas};
let leaving = null; // stops the shown page's polling

function route() {
  const [, name = 'servers', id] = window.location.hash.split('/');
  const saved = session();
  const page = saved ? (PAGES[name] || servers) : login;
  if (leaving) leaving();
  leaving = null;
  showSession(saved, page === login ? 'login' : name);
  const main = document.getElementById('main');
  fill(main);
  leaving = page.render(main, id === undefined ? undefined : decodeURIComponent(id)) || null;
}

function showSession(saved, current) {
  document.getElementById('nav').hidden = !saved;
  document.getElementById('logout').hidden = !saved;
  document.getElementById('who').textContent = saved
    ? `${saved.user} · project ${saved.project} · ${saved.roles.join(', ')}` : '';
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('current', a.dataset.page === current
      || (a.dataset.page === 'servers' && current === 'server'));
  }
}

document.getElementById('logout').addEventListener('click', () => {
  logout();
  window.location.hash = '#/login';
  route();
});
window.addEventListener('hashchange', route);
route();
