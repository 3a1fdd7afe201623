// The login page: a password against the cloud's identity service, scoped
// to a project of the Default domain.
import {login} from './api.js';
import {fill, h, notice} from './dom.js';

function go(hash) {
  if (window.location.hash === hash) window.dispatchEvent(new HashChangeEvent('hashchange'));
  else window.location.hash = hash;
}

export function render(main) {
  const status = h('div', {id: 'login-status'});
  const field = (label, name, type = 'text', value = '') => h('label', {}, label,
    h('input', {name, type, value, required: true, autocomplete: type === 'password' ? 'current-password' : 'on'}));
  const form = h('form', {id: 'login', class: 'card narrow'},
    h('h1', {}, 'Log in'),
    field('User', 'user'), field('Password', 'password', 'password'), field('Project', 'project'),
    h('p', {class: 'hint'}, 'Domain: Default'),
    h('button', {type: 'submit'}, 'Log in'), status);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    fill(status, notice('info', 'Logging in…'));
    try {
      await login(data.get('user'), data.get('password'), data.get('project'));
      go('#/servers');
    } catch (error) {
      fill(status, notice('error', error.message));
    }
  });
  main.append(form);
}
