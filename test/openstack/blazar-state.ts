/**
 * Nova and Placement objects made as Blazar makes them (blazar/utils/openstack/nova.py,
 * placement.py, the host and instance plugins), for tests of Climate adopting them.
 */
import { novaAs, PLACEMENT, type Tenant } from './support.js';

export interface NovaAggregate {
  id: number;
  name: string;
  hosts: string[];
  metadata: Record<string, string>;
  availability_zone: string | null;
}

export async function aggregates(admin: string): Promise<NovaAggregate[]> {
  return (await novaAs(admin, 'GET', '/os-aggregates')).aggregates as NovaAggregate[];
}

/** ReservationPool.create, then add_computehost: the aggregate's Nova id. */
export async function makeAggregate(
  admin: string,
  name: string,
  zone: string | null,
  metadata: Record<string, string>,
  hosts: string[],
): Promise<number> {
  const made = (await novaAs(admin, 'POST', '/os-aggregates', {
    aggregate: { name, ...(zone === null ? {} : { availability_zone: zone }) },
  })) as { aggregate?: { id: number } };
  if (made.aggregate === undefined) throw new Error(`aggregate ${name}: ${JSON.stringify(made)}`);
  const id = made.aggregate.id;
  if (Object.keys(metadata).length > 0) {
    await novaAs(admin, 'POST', `/os-aggregates/${id}/action`, { set_metadata: { metadata } });
  }
  for (const host of hosts) await addHost(admin, id, host);
  return id;
}

export async function addHost(admin: string, aggregateId: number, host: string): Promise<void> {
  await novaAs(admin, 'POST', `/os-aggregates/${aggregateId}/action`, { add_host: { host } });
}

/** Removes an aggregate's hosts and deletes it (a test's clean-up). */
export async function dropAggregate(admin: string, name: string): Promise<void> {
  const agg = (await aggregates(admin)).find((a) => a.name === name);
  if (agg === undefined) return;
  for (const host of agg.hosts) {
    await novaAs(admin, 'POST', `/os-aggregates/${agg.id}/action`, { remove_host: { host } });
  }
  await novaAs(admin, 'DELETE', `/os-aggregates/${agg.id}`);
}

/** InstancePlugin._create_flavor: private, id and name from the reservation. */
export async function makeFlavor(
  admin: string,
  reservationId: string,
  size: { vcpus: number; ram: number; disk: number },
  groupId: string | null,
): Promise<void> {
  await novaAs(admin, 'POST', '/flavors', {
    flavor: {
      id: reservationId,
      name: `reservation:${reservationId}`,
      ...size,
      'os-flavor-access:is_public': false,
    },
  });
  await novaAs(admin, 'POST', `/flavors/${reservationId}/os-extra_specs`, {
    extra_specs: {
      'aggregate_instance_extra_specs:reservation': reservationId,
      [`resources:${reservationClass(reservationId)}`]: '1',
      ...(groupId === null ? {} : { affinity_id: groupId }),
    },
  });
}

/**
 * InstancePlugin._create_resources: the group (as the tenant), the flavor and the
 * aggregate; with `hosts`, also on_start's flavor access and hosts.
 */
export async function instanceObjects(
  admin: string,
  owner: Tenant,
  id: string,
  policy: string,
  size: { vcpus: number; ram: number; disk: number },
  hosts: string[],
): Promise<{ groupId: string; aggregateId: number }> {
  const made = (await novaAs(owner.token, 'POST', '/os-server-groups', {
    server_group: { name: `reservation:${id}`, policy },
  })) as { server_group: { id: string } };
  const groupId = made.server_group.id;
  await makeFlavor(admin, id, size, groupId);
  if (hosts.length > 0) {
    await novaAs(admin, 'POST', `/flavors/${id}/action`, {
      addTenantAccess: { tenant: owner.projectId },
    });
  }
  const metadata = {
    reservation: id,
    filter_tenant_id: owner.projectId,
    affinity_id: groupId,
    'blazar:owner': owner.projectId,
  };
  return { groupId, aggregateId: await makeAggregate(admin, id, null, metadata, hosts) };
}

export function reservationClass(reservationId: string): string {
  return `CUSTOM_RESERVATION_${reservationId.toUpperCase().replace(/-/g, '_')}`;
}

export async function placementAs(
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${PLACEMENT}${path}`, {
    method,
    headers: {
      'X-Auth-Token': token,
      'OpenStack-API-Version': 'placement 1.14',
      'Content-Type': 'application/json',
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>),
  };
}

async function providerUuid(admin: string, name: string): Promise<string | null> {
  const { body } = await placementAs(admin, 'GET', `/resource_providers?name=${name}`);
  return (body.resource_providers as { uuid: string }[])[0]?.uuid ?? null;
}

/** create_reservation_provider, as host registration makes it: blazar_<host> under the node. */
export async function makeReservationProvider(admin: string, host: string): Promise<string> {
  const found = await providerUuid(admin, `blazar_${host}`);
  if (found !== null) return found;
  const parent = await providerUuid(admin, host);
  await placementAs(admin, 'POST', '/resource_providers', {
    name: `blazar_${host}`,
    parent_provider_uuid: parent,
  });
  return (await providerUuid(admin, `blazar_${host}`)) as string;
}

/** create_reservation_class, then update_reservation_inventory at the start. */
export async function sizeReservation(
  admin: string,
  reservationId: string,
  host: string,
  total: number,
): Promise<void> {
  const rc = reservationClass(reservationId);
  await placementAs(admin, 'PUT', `/resource_classes/${rc}`);
  const uuid = await makeReservationProvider(admin, host);
  const { body } = await placementAs(admin, 'GET', `/resource_providers/${uuid}/inventories`);
  const made = await placementAs(admin, 'POST', `/resource_providers/${uuid}/inventories`, {
    resource_class: rc,
    total,
    reserved: 0,
    min_unit: 1,
    max_unit: 1,
    step_size: 1,
    allocation_ratio: 1.0,
    resource_provider_generation: body.resource_provider_generation,
  });
  if (made.status >= 300) throw new Error(`inventory of ${rc}: ${JSON.stringify(made.body)}`);
}

/** The reservation's inventory on a host's reservation provider (0: none). */
export async function reservationUnits(
  admin: string,
  reservationId: string,
  host: string,
): Promise<number> {
  const uuid = await providerUuid(admin, `blazar_${host}`);
  if (uuid === null) return 0;
  const { body } = await placementAs(admin, 'GET', `/resource_providers/${uuid}/inventories`);
  const inventories = body.inventories as Record<string, { total: number }>;
  return inventories[reservationClass(reservationId)]?.total ?? 0;
}

export async function classExists(admin: string, reservationId: string): Promise<boolean> {
  const res = await placementAs(
    admin,
    'GET',
    `/resource_classes/${reservationClass(reservationId)}`,
  );
  return res.status === 200;
}
