/**
 * The rules Climate enforces and their defaults: Blazar's names and secure-RBAC defaults
 * (roles admin > member > reader, project scope), and Climate's own routes in the same
 * style. A POLICY_FILE overrides any of them.
 */

export interface Operation {
  method: string;
  path: string;
}

export interface RuleDefault {
  name: string;
  check: string;
  description: string;
  /** The routes the rule decides; none for the base rules others are built from. */
  operations: Operation[];
}

const op = (method: string, path: string): Operation => ({ method, path });

const ADMIN = 'rule:admin';
const READER = 'rule:project_reader_or_admin';
const MEMBER = 'rule:project_member_or_admin';

export const BASE_RULES: RuleDefault[] = [
  {
    name: 'admin',
    check: 'is_admin:True or role:admin',
    description: 'An administrator of the cloud.',
    operations: [],
  },
  {
    name: 'project_member_api',
    check: 'role:member and project_id:%(project_id)s',
    description: 'A member of the project that owns the object.',
    operations: [],
  },
  {
    name: 'project_reader_api',
    check: 'role:reader and project_id:%(project_id)s',
    description: 'A reader of the project that owns the object.',
    operations: [],
  },
  {
    name: 'project_member_or_admin',
    check: 'rule:admin or rule:project_member_api',
    description: 'A member of the project, or an administrator.',
    operations: [],
  },
  {
    name: 'project_reader_or_admin',
    check: 'rule:admin or rule:project_reader_api',
    description: 'A reader of the project, or an administrator.',
    operations: [],
  },
  {
    name: 'admin_or_owner',
    check: 'rule:admin or project_id:%(project_id)s',
    description:
      "Blazar's deprecated pre-RBAC default: anyone in the project, whatever the role. " +
      'Used by no default; there for site rules.',
    operations: [],
  },
];

export const API_RULES: RuleDefault[] = [
  {
    name: 'blazar:leases:get',
    check: READER,
    description:
      'List leases (a non-admin sees its own project only) and show one; checked against ' +
      "the lease's project_id and user_id. A lease it refuses is answered 404.",
    operations: [op('GET', '/v1/leases'), op('GET', '/v1/leases/{id}')],
  },
  {
    name: 'blazar:leases:post',
    check: MEMBER,
    description: 'Create a lease in the caller’s project.',
    operations: [op('POST', '/v1/leases')],
  },
  {
    name: 'blazar:leases:put',
    check: MEMBER,
    description: "Update a lease; checked against the lease's project_id and user_id.",
    operations: [op('PUT', '/v1/leases/{id}')],
  },
  {
    name: 'blazar:leases:delete',
    check: MEMBER,
    description: "Delete a lease; checked against the lease's project_id and user_id.",
    operations: [op('DELETE', '/v1/leases/{id}')],
  },
  {
    name: 'blazar:oshosts:get',
    check: ADMIN,
    description: 'List hosts and show one.',
    operations: [op('GET', '/v1/os-hosts'), op('GET', '/v1/os-hosts/{id}')],
  },
  {
    name: 'blazar:oshosts:post',
    check: ADMIN,
    description: 'Register a host.',
    operations: [op('POST', '/v1/os-hosts')],
  },
  {
    name: 'blazar:oshosts:put',
    check: ADMIN,
    description: 'Update a host, or move it between pools.',
    operations: [op('PUT', '/v1/os-hosts/{id}'), op('PUT', '/v1/os-hosts/{id}/pool')],
  },
  {
    name: 'blazar:oshosts:delete',
    check: ADMIN,
    description: 'Remove a host.',
    operations: [op('DELETE', '/v1/os-hosts/{id}')],
  },
  {
    name: 'blazar:oshosts:get_allocations',
    check: ADMIN,
    description:
      'The host calendar: every host with the reservations on it. A caller that passes ' +
      'it without passing blazar:leases:get for a lease sees that lease’s entries as ' +
      'anonymous (id and lease_id null). Without it, a caller may still ask for its own ' +
      "lease's allocations with ?lease_id= or ?reservation_id= (blazar:leases:get decides).",
    operations: [op('GET', '/v1/os-hosts/allocations'), op('GET', '/v1/os-hosts/{id}/allocation')],
  },
  {
    name: 'blazar:oshosts:get_resource_properties',
    check: ADMIN,
    description: 'List the extra-capability names of hosts.',
    operations: [op('GET', '/v1/os-hosts/properties')],
  },
  {
    name: 'blazar:oshosts:update_resource_properties',
    check: ADMIN,
    description: 'Make an extra-capability name private or public.',
    operations: [op('PATCH', '/v1/os-hosts/properties/{name}')],
  },
  {
    name: 'blazar:floatingips:get',
    check: READER,
    description: 'List the floating IPs registered for reservation and show one.',
    operations: [op('GET', '/v1/floatingips'), op('GET', '/v1/floatingips/{id}')],
  },
  {
    name: 'blazar:floatingips:post',
    check: ADMIN,
    description: 'Register a floating IP for reservation.',
    operations: [op('POST', '/v1/floatingips')],
  },
  {
    name: 'blazar:floatingips:delete',
    check: ADMIN,
    description: 'Delete a floating IP registered for reservation.',
    operations: [op('DELETE', '/v1/floatingips/{id}')],
  },
  {
    name: 'climate:capacity:get',
    check: READER,
    description:
      'The capacity plan: counts of matching hosts, reserved and free, step by step. ' +
      'Counts only: no lease, project or host name.',
    operations: [op('GET', '/v1/os-hosts/capacity')],
  },
  {
    name: 'climate:availability:get',
    check: READER,
    description:
      'When N matching hosts are free for a duration: windows and counts only, no lease, ' +
      'project or host name.',
    operations: [op('GET', '/v1/os-hosts/availability')],
  },
  {
    name: 'climate:instances:availability:get',
    check: READER,
    description:
      'When N instance slots of a size fit for a duration: windows only, no lease, ' +
      'project or host name.',
    operations: [op('GET', '/v1/instances/availability')],
  },
  {
    name: 'climate:pools:get',
    check: ADMIN,
    description: 'List the pools and topology aggregates with their hosts.',
    operations: [op('GET', '/v1/pools')],
  },
  {
    name: 'climate:scheduler:filter',
    check: ADMIN,
    description: 'Which hosts a boot may use (the Nova filter asks as a service user).',
    operations: [op('POST', '/v1/scheduler/filter')],
  },
  {
    name: 'climate:claims:post',
    check: MEMBER,
    description:
      "Claim a slot of an instance reservation; checked against the reservation's lease.",
    operations: [op('POST', '/v1/reservations/{id}/claims')],
  },
  {
    name: 'climate:claims:delete',
    check: MEMBER,
    description: "Release a claim; checked against the claim's lease.",
    operations: [op('DELETE', '/v1/claims/{id}')],
  },
  {
    name: 'climate:power_plan:get',
    check: ADMIN,
    description: "The power plan: each host's power state and planned transitions.",
    operations: [op('GET', '/v1/power-plan')],
  },
  {
    name: 'climate:oshosts:power',
    check: ADMIN,
    description: 'Mark a host always on, or not.',
    operations: [op('PUT', '/v1/os-hosts/{id}/power')],
  },
  {
    name: 'climate:metrics:get',
    check: ADMIN,
    description:
      'Prometheus metrics on the API port (roles api and all without METRICS_PORT). A ' +
      'scraper has no Keystone token: set this rule to "@" to let anyone in without one, ' +
      'or give the scraper METRICS_PORT, which asks for no token and no rule. /healthz and ' +
      '/readyz are open on both ports.',
    operations: [op('GET', '/metrics')],
  },
];

export const DEFAULT_RULES: RuleDefault[] = [...BASE_RULES, ...API_RULES];
