// Sign-in: the token of a berth user (`berth acl token create`, or the management token).
// It is kept in this tab only (sessionStorage) and sent as a bearer token.
import { setToken, signOut, get } from './api.js';
import { h } from './dom.js';

export async function signinPage({ main }) {
  const input = h('input', { id: 'token', type: 'password', autocomplete: 'off', placeholder: 'berth-acl-…', required: true });
  const problem = h('p', { class: 'error', role: 'alert' });
  const form = h('form', { class: 'signin card', onsubmit: async (e) => {
    e.preventDefault();
    problem.textContent = '';
    setToken(input.value);
    try {
      const me = await get('/v1/acl/whoami');
      if (me.anonymous) throw new Error('that token is not known to berth');
      window.dispatchEvent(new Event('berth:signed-in'));
      location.hash = '#/workloads';
    } catch (err) {
      signOut();
      problem.textContent = 'Sign-in failed: ' + err.message;
    }
  } },
  h('h1', {}, 'Sign in to berth'),
  h('label', { for: 'token' }, 'Token'),
  input,
  h('button', { class: 'primary', type: 'submit', id: 'signin' }, 'Sign in'),
  problem,
  h('p', { class: 'muted' }, 'The console acts with this token\'s rights only. It is kept in this browser tab until you sign out or close it.'));
  main.append(form);
  input.focus();
}
