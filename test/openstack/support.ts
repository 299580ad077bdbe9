/** Helpers for tests against the real Keystone and Nova of ../shared/openstack. */

export const KS = process.env.OS_KEYSTONE_URL ?? 'http://127.0.0.1:5000/v3';
export const NOVA = process.env.OS_NOVA_URL ?? 'http://127.0.0.1:8774/v2.1';
export const PLACEMENT = process.env.OS_PLACEMENT_URL ?? 'http://127.0.0.1:8778';
/** The RabbitMQ Nova publishes its notifications to (transport_url of nova.conf). */
export const NOVA_BROKER =
  process.env.OS_NOVA_TRANSPORT_URL ?? 'rabbit://openstack:rabbitpass@127.0.0.1:15673/';
/** Where nova-scheduler's Climate filter finds Climate ([climate] url in nova.conf). */
export const CLIMATE_PORT = Number(process.env.CLIMATE_TEST_PORT ?? 18778);

export interface Tenant {
  token: string;
  projectId: string;
}

export async function token(user: string, password: string, project: string): Promise<Tenant> {
  const res = await fetch(`${KS}/auth/tokens`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      auth: {
        identity: {
          methods: ['password'],
          password: { user: { name: user, domain: { id: 'default' }, password } },
        },
        scope: { project: { name: project, domain: { id: 'default' } } },
      },
    }),
  });
  if (!res.ok) throw new Error(`keystone ${res.status}`);
  const body = (await res.json()) as { token: { project: { id: string } } };
  return { token: res.headers.get('x-subject-token') as string, projectId: body.token.project.id };
}

export async function keystone(
  adminToken: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<Record<string, unknown>> {
  const res = await fetch(`${KS}${path}`, {
    method,
    headers: { 'X-Auth-Token': adminToken, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
}

/** A project with a member user, created once (reused when it exists). */
export async function tenant(adminToken: string, name: string): Promise<Tenant> {
  const projects = (await keystone(adminToken, 'GET', `/projects?name=${name}`)).projects as {
    id: string;
  }[];
  const projectId =
    projects[0]?.id ??
    (
      (await keystone(adminToken, 'POST', '/projects', { project: { name, domain_id: 'default' } }))
        .project as { id: string }
    ).id;
  const users = (await keystone(adminToken, 'GET', `/users?name=${name}-user`)).users as {
    id: string;
  }[];
  const userId =
    users[0]?.id ??
    (
      (
        await keystone(adminToken, 'POST', '/users', {
          user: { name: `${name}-user`, password: 'pw', domain_id: 'default' },
        })
      ).user as { id: string }
    ).id;
  const roles = (await keystone(adminToken, 'GET', '/roles?name=member')).roles as { id: string }[];
  await keystone(adminToken, 'PUT', `/projects/${projectId}/users/${userId}/roles/${roles[0].id}`);
  return token(`${name}-user`, 'pw', name);
}

/** One Nova call as the given token; the parsed body (empty object when none). */
export async function novaAs(
  tokenValue: string,
  method: string,
  path: string,
  body?: unknown,
  version = '2.79',
): Promise<Record<string, unknown>> {
  const res = await fetch(`${NOVA}${path}`, {
    method,
    headers: {
      'X-Auth-Token': tokenValue,
      'X-OpenStack-Nova-API-Version': version,
      'Content-Type': 'application/json',
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
}

export async function placement(
  adminToken: string,
  path: string,
): Promise<Record<string, unknown>> {
  const res = await fetch(`${PLACEMENT}${path}`, {
    headers: { 'X-Auth-Token': adminToken, 'OpenStack-API-Version': 'placement 1.14' },
  });
  return (await res.json()) as Record<string, unknown>;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Booted {
  id: string;
  status: string;
  host: string | null;
}

/** A server's status and host as an admin sees them. */
export async function serverState(adminToken: string, id: string): Promise<Booted | null> {
  const s = (await novaAs(adminToken, 'GET', `/servers/${id}`)).server as
    Record<string, unknown> | undefined;
  if (s === undefined) return null;
  return {
    id,
    status: s.status as string,
    host: (s['OS-EXT-SRV-ATTR:host'] as string | null) ?? null,
  };
}

/** Waits until a server's status is one of `statuses` (90 s at most). */
export async function waitFor(adminToken: string, id: string, statuses: string[]): Promise<Booted> {
  let last: Booted | null = null;
  for (let i = 0; i < 90; i++) {
    last = await serverState(adminToken, id);
    if (last !== null && statuses.includes(last.status)) return last;
    await sleep(1000);
  }
  throw new Error(`server ${id} did not reach ${statuses.join('/')}: ${JSON.stringify(last)}`);
}

let image: string | null = null;

/** Boots a server without networks and waits until it is ACTIVE or ERROR. */
export async function boot(
  tokenValue: string,
  adminToken: string,
  name: string,
  flavor: string,
  hints?: Record<string, string>,
): Promise<Booted> {
  if (image === null) {
    const images = await fetch('http://127.0.0.1:9292/v2/images?name=tiny', {
      headers: { 'X-Auth-Token': adminToken },
    });
    image = ((await images.json()) as { images: { id: string }[] }).images[0].id;
  }
  const made = (await novaAs(tokenValue, 'POST', '/servers', {
    server: { name, imageRef: image, flavorRef: flavor, networks: 'none' },
    ...(hints ? { 'os:scheduler_hints': hints } : {}),
  })) as { server?: { id: string } };
  if (made.server === undefined) throw new Error(`boot refused: ${JSON.stringify(made)}`);
  return waitFor(adminToken, made.server.id, ['ACTIVE', 'ERROR']);
}

export async function gone(adminToken: string, id: string): Promise<boolean> {
  for (let i = 0; i < 60; i++) {
    const res = await fetch(`${NOVA}/servers/${id}`, { headers: { 'X-Auth-Token': adminToken } });
    await res.text();
    if (res.status === 404) return true;
    await sleep(1000);
  }
  return false;
}

/** Deletes servers (as admin) and waits until they are gone. */
export async function removeServers(adminToken: string, ids: string[]): Promise<void> {
  for (const id of ids) await novaAs(adminToken, 'DELETE', `/servers/${id}`);
  for (const id of ids) await gone(adminToken, id);
}

export interface ComputeServiceRow {
  id: string;
  status: string;
  state: string;
  disabled_reason: string | null;
  forced_down: boolean;
}

/** A compute host's nova-compute service as Nova shows it (os-services, microversion 2.53). */
export async function computeServiceRow(
  adminToken: string,
  host: string,
): Promise<ComputeServiceRow> {
  const { services } = (await novaAs(
    adminToken,
    'GET',
    `/os-services?binary=nova-compute&host=${host}`,
    undefined,
    '2.53',
  )) as { services: ComputeServiceRow[] };
  return services[0];
}

/** Changes a compute host's nova-compute service. */
async function setComputeService(
  adminToken: string,
  host: string,
  change: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const { id } = await computeServiceRow(adminToken, host);
  return novaAs(adminToken, 'PUT', `/os-services/${id}`, change, '2.53');
}

/** Turns a compute host's nova-compute service off or on (nothing is scheduled there off). */
export async function computeService(adminToken: string, host: string, enabled: boolean) {
  await setComputeService(
    adminToken,
    host,
    enabled ? { status: 'enabled' } : { status: 'disabled', disabled_reason: 'test' },
  );
}

/** Forces a compute host's service down or lifts it (what an operator or Masakari does). */
export async function forceDown(adminToken: string, host: string, down: boolean): Promise<void> {
  const answer = await setComputeService(adminToken, host, { forced_down: down });
  const service = answer.service as { forced_down?: boolean } | undefined;
  if (service?.forced_down !== down) throw new Error(`force down: ${JSON.stringify(answer)}`);
}
