// The user's session and calls to the cloud's public APIs with its token.
// The token lives in sessionStorage (gone with the tab) and travels only in
// the X-Auth-Token header, never in a URL.

const KEY = 'cirrus.session';
// 2.84: instance-action events carry their details (the boot timeline).
export const COMPUTE_VERSION = '2.84';

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** The logged-in session, or null when there is none or its token expired. */
export function session() {
  const raw = sessionStorage.getItem(KEY);
  if (!raw) return null;
  const saved = JSON.parse(raw);
  if (Date.parse(saved.expires) <= Date.now()) {
    sessionStorage.removeItem(KEY);
    return null;
  }
  return saved;
}

export function isAdmin(saved = session()) {
  return Boolean(saved && saved.roles.includes('admin'));
}

export function logout() {
  sessionStorage.removeItem(KEY);
}

// The dashboard is served by the API it calls, and its content security
// policy allows requests to this origin only: an endpoint is taken by its
// path on this origin, whatever host name the catalog was configured with.
function onThisOrigin(url) {
  return window.location.origin + new URL(url, window.location.href).pathname.replace(/\/$/, '');
}

function endpoints(catalog) {
  const out = {};
  for (const service of catalog) {
    const endpoint = service.endpoints.find((e) => e.interface === 'public') || service.endpoints[0];
    if (endpoint) out[service.type] = onThisOrigin(endpoint.url);
  }
  return out;
}

async function identityEndpoint() {
  // The cloud's index (one level above /dashboard/) names the identity service.
  const index = await fetch(new URL('../', window.location.href), {headers: {Accept: 'application/json'}});
  if (!index.ok) throw new ApiError(index.status, 'The cloud did not say where its identity service is.');
  return onThisOrigin((await index.json()).services.identity);
}

/** Log in with a password, scoped to ``project`` (domain Default). */
export async function login(user, password, project) {
  const domain = {name: 'Default'};
  const body = {auth: {
    identity: {methods: ['password'], password: {user: {name: user, domain, password}}},
    scope: {project: {name: project, domain}},
  }};
  const response = await fetch(`${await identityEndpoint()}/v3/auth/tokens`, {
    method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify(body),
  });
  if (!response.ok) throw await errorOf(response);
  const token = (await response.json()).token;
  const saved = {
    token: response.headers.get('X-Subject-Token'), expires: token.expires_at,
    user: token.user.name, project: token.project.name, projectId: token.project.id,
    roles: token.roles.map((r) => r.name), endpoints: endpoints(token.catalog),
  };
  sessionStorage.setItem(KEY, JSON.stringify(saved));
  return saved;
}

// OpenStack's error bodies differ by service: {"itemNotFound": {"message"}}
// (compute), {"NeutronError": {"message"}}, {"error": {"message"}} (identity).
async function errorOf(response) {
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    const inner = Object.values(body).find((v) => v && typeof v === 'object' && v.message);
    if (inner) message = String(inner.message);
    else if (typeof body.message === 'string') message = body.message;
  } catch {
    // not JSON: the status line says enough
  }
  return new ApiError(response.status, message);
}

/** Call ``service`` (a catalog type: compute, network, image, identity) at
 * ``path``; the parsed JSON answer, or null for an empty one. Throws ApiError;
 * a 401 ends the session and goes back to the login page. */
export async function call(service, path, {method = 'GET', body} = {}) {
  const saved = session();
  if (!saved) {
    window.location.hash = '#/login';
    throw new ApiError(401, 'Your session has ended: please log in.');
  }
  const headers = {'X-Auth-Token': saved.token, Accept: 'application/json'};
  if (service === 'compute') headers['OpenStack-API-Version'] = `compute ${COMPUTE_VERSION}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(saved.endpoints[service] + path, {
    method, headers, cache: 'no-store', body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 401) {
    logout();
    window.location.hash = '#/login';
  }
  if (!response.ok) throw await errorOf(response);
  const text = await response.text();
  return text ? JSON.parse(text) : null;
}

/** ``call`` for a server action (os-start, os-stop, reboot, …). */
export function serverAction(id, action) {
  return call('compute', `/servers/${encodeURIComponent(id)}/action`, {method: 'POST', body: action});
}
