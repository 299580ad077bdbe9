import type { Server, ServerInfo } from './compute-driver.js';
import { NovaApi, NovaError } from './nova-api.js';
import { ComputeServiceError } from './openstack-http.js';

interface NovaServer {
  id: string;
  name: string;
  tenant_id: string;
  status: string;
  'OS-EXT-STS:task_state'?: string | null;
  'OS-EXT-SRV-ATTR:host'?: string | null;
  'OS-EXT-SRV-ATTR:hypervisor_hostname'?: string | null;
  fault?: { message?: string };
  flavor: { vcpus: number; ram: number; disk: number; extra_specs?: Record<string, string> };
}

const POLL_MS = 1000;
/** Polls a deleted server may still look idle before the delete counts as not done. */
const DELETE_IDLE_POLLS = 5;

function preemptible(server: NovaServer): boolean {
  return /^(true|1|yes)$/i.test(server.flavor.extra_specs?.['blazar:preemptible'] ?? '');
}

/**
 * Nova's servers: reading them, and the asynchronous actions Climate takes on them
 * (unshelve onto a host, shelve, delete), each done only once Nova shows its result.
 * `serviceHost` maps a hypervisor name to its compute service host.
 */
export class NovaServers {
  constructor(
    private readonly api: NovaApi,
    private readonly serviceHost: (hypervisorHostname: string) => Promise<string>,
    private readonly actionTimeoutMs: number,
  ) {}

  async get(id: string): Promise<ServerInfo | null> {
    const server = await this.server(id);
    if (server === null) return null;
    return {
      id: server.id,
      projectId: server.tenant_id,
      status: server.status,
      host: server['OS-EXT-SRV-ATTR:hypervisor_hostname'] ?? null,
      vcpus: server.flavor.vcpus,
      memoryMb: server.flavor.ram,
      diskGb: server.flavor.disk,
    };
  }

  /**
   * 2.91: an admin may unshelve onto a chosen host. Done once the server is ACTIVE
   * there; an unshelve Nova gave up on (back to SHELVED_OFFLOADED, or ERROR) fails with
   * Nova's own reason.
   */
  async unshelve(id: string, host: string): Promise<void> {
    const target = await this.serviceHost(host);
    const before = await this.server(id);
    if (before === null) throw new NovaError(404, `Server ${id} not found`);
    if (before.status.startsWith('SHELVED') && !before['OS-EXT-STS:task_state']) {
      await this.api.call(
        'POST',
        `/servers/${id}/action`,
        { unshelve: { host: target } },
        [409],
        '2.91',
      );
    }
    const after = await this.settle(id);
    if (after === null) throw new NovaError(404, `Server ${id} vanished while unshelving`);
    if (after.status === 'ACTIVE' && after['OS-EXT-SRV-ATTR:host'] === target) return;
    const where =
      after.status === 'ACTIVE' ? `it runs on ${after['OS-EXT-SRV-ATTR:host']}` : after.status;
    throw new ComputeServiceError(
      `Nova did not unshelve server ${id} onto ${host}: ${where}${await this.fault(id, after)}`,
    );
  }

  async shelve(id: string): Promise<void> {
    const server = await this.server(id);
    if (server === null) throw new NovaError(404, `Server ${id} not found`);
    if (server.status === 'SHELVED') {
      await this.api.call('POST', `/servers/${id}/action`, { shelveOffload: null }, [409]);
    } else if (!server.status.startsWith('SHELVED')) {
      await this.api.call('POST', `/servers/${id}/action`, { shelve: null }, [409]);
    }
    let after = await this.settle(id);
    if (after?.status === 'SHELVED') {
      // Nova keeps shelved servers on their host for a while unless told otherwise.
      await this.api.call('POST', `/servers/${id}/action`, { shelveOffload: null }, [409]);
      after = await this.settle(id);
    }
    if (after?.status !== 'SHELVED_OFFLOADED') {
      throw new ComputeServiceError(
        `Nova did not shelve server ${id}: ${after?.status ?? 'gone'}${after ? await this.fault(id, after) : ''}`,
      );
    }
  }

  /**
   * Done once the server is gone. Nova may show it idle for a moment after answering the
   * DELETE, so only ERROR, or a server still idle after several polls (or the action
   * timeout), counts as a delete Nova did not do.
   */
  async delete(id: string): Promise<void> {
    await this.api.call('DELETE', `/servers/${id}`, undefined, [404]);
    const deadline = Date.now() + this.actionTimeoutMs;
    let idlePolls = 0;
    for (;;) {
      const s = await this.server(id);
      if (s === null) return;
      const idle = !s['OS-EXT-STS:task_state'];
      idlePolls = idle ? idlePolls + 1 : 0;
      if (
        (idle && s.status === 'ERROR') ||
        idlePolls > DELETE_IDLE_POLLS ||
        Date.now() >= deadline
      ) {
        throw new ComputeServiceError(
          `Nova did not delete server ${id}: ${s.status}${await this.fault(id, s)}`,
        );
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }

  async list(filter: string): Promise<Server[]> {
    const { servers } = await this.api.call<{ servers: NovaServer[] }>(
      'GET',
      `/servers/detail?all_tenants=1&${filter}`,
    );
    return servers.map((s) => ({
      id: s.id,
      name: s.name,
      projectId: s.tenant_id,
      preemptible: preemptible(s),
    }));
  }

  private async server(id: string): Promise<NovaServer | null> {
    const { server } = await this.api.call<{ server?: NovaServer }>(
      'GET',
      `/servers/${encodeURIComponent(id)}`,
      undefined,
      [404],
    );
    return server ?? null;
  }

  /**
   * Polls a server until no task runs on it (Nova has finished or given up on the
   * action), it is gone (null), or the action timeout passes (the last state seen).
   * Nova sets the task before it answers an action, so an idle server is a result.
   */
  private async settle(id: string): Promise<NovaServer | null> {
    const deadline = Date.now() + this.actionTimeoutMs;
    for (;;) {
      const s = await this.server(id);
      if (s === null || (!s['OS-EXT-STS:task_state'] && s.status !== 'BUILD')) return s;
      if (Date.now() >= deadline) return s;
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }

  /** Nova's reason for the last failed action on a server, when it gives one. */
  private async fault(id: string, server: NovaServer): Promise<string> {
    if (server.fault?.message) return `: ${server.fault.message}`;
    const { instanceActions } = await this.api.call<{
      instanceActions?: { action: string; request_id: string }[];
    }>('GET', `/servers/${id}/os-instance-actions`, undefined, [404]);
    const last = instanceActions?.[0];
    if (last === undefined) return '';
    const { instanceAction } = await this.api.call<{
      instanceAction?: { events?: { event: string; result: string; details?: string }[] };
    }>('GET', `/servers/${id}/os-instance-actions/${last.request_id}`, undefined, [404], '2.84');
    const failed = (instanceAction?.events ?? []).filter((e) => e.result === 'Error');
    return failed.length === 0
      ? ` (${last.action})`
      : `: ${last.action} ${failed.map((e) => `${e.event}: ${e.details ?? 'Error'}`).join('; ')}`;
  }
}
