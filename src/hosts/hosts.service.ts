import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { Clock } from '../common/clock.js';
import { Conflict, InvalidInput, NotFound } from '../common/errors.js';
import { checkLength } from '../common/storable.js';
import type { JsonObject } from '../common/json.js';
import { COMPUTE_DRIVER, type ComputeDriver } from '../compute/compute-driver.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { pgCode } from '../database/transaction.js';
import { sql } from '../database/sql.js';
import { clearReportedDown } from '../pools/hosts.repository.js';
import { withTransaction } from '../database/transaction.js';
import { HOST_USAGE, liveParamsOn, slotPeak } from '../pools/host-usage.js';
import { hostNameOf, type HostCreateRequest, type HostUpdateRequest } from './dto/host.request.js';
import type { HostResponse } from './dto/host.response.js';
import { Host } from './entities/host.entity.js';
import { builtinInventory, MAX_HOST_TEXT, splitHostFields } from './host-fields.js';
import { toHostWire } from './host.mapper.js';
import { HostPropertiesService } from './host-properties.service.js';
import { PoolsRepository } from '../pools/pools.repository.js';
import { PoolsService } from '../pools/pools.service.js';
import { EvacuationPort } from '../pools/evacuation.js';
import { FREEPOOL, type MovablePool } from '../pools/pool-names.js';
import { combine } from '../requirements/host-query.js';
import { requirementKeys } from '../requirements/requirements.js';

const HOST_ID = /^[0-9]{1,9}$/;

/** Hosts of the reservation pool (/v1/os-hosts), admin only. */
@Injectable()
export class HostsService {
  private readonly logger = new Logger('hosts');

  constructor(
    private readonly dataSource: DataSource,
    private readonly pools: PoolsRepository,
    private readonly properties: HostPropertiesService,
    private readonly poolMoves: PoolsService,
    private readonly healing: EvacuationPort,
    private readonly clock: Clock,
    @Inject(COMPUTE_DRIVER) private readonly driver: ComputeDriver,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  async list(): Promise<HostResponse[]> {
    const em = this.dataSource.manager;
    const hosts = await em.find(Host, { order: { id: 'ASC' } });
    const pools = await this.pools.poolNames(em);
    return hosts.map((h) => toHostWire(h, pools.get(h.id) ?? null));
  }

  async get(id: string): Promise<HostResponse> {
    const em = this.dataSource.manager;
    const host = await this.find(em, id);
    return toHostWire(host, (await this.pools.poolOf(em, host.id))?.name ?? null);
  }

  /** `body` as HostCreateRequest checked it. */
  async create(body: HostCreateRequest): Promise<HostResponse> {
    const name = String(hostNameOf(body));
    const fields = splitHostFields(body, ['name', 'id']);
    this.checkTopology(fields.capabilities);
    const inventory =
      (await this.driver.hostInventory(name)) ?? builtinInventory(name, fields.inventory);
    await this.assertNoServers(inventory.hypervisorHostname);
    const host = await withTransaction(this.dataSource, async (tx) => {
      const now = this.clock.now();
      const row = tx.create(Host, {
        ...inventory,
        reservable: fields.reservable ?? true,
        capabilities: fields.capabilities,
        trustId: null,
        createdAt: now,
        updatedAt: null,
      });
      try {
        await tx.insert(Host, row);
      } catch (error) {
        if (pgCode(error) === '23505') {
          throw new Conflict(
            `Host ${inventory.hypervisorHostname} is already registered`,
            'HostExists',
          );
        }
        throw error;
      }
      await this.properties.register(tx, Object.keys(fields.capabilities), now);
      await this.pools.moveHosts(tx, [row.id], FREEPOOL, now);
      await this.pools.setTopology(tx, row.id, this.topology(row.capabilities), now);
      return row;
    });
    await this.driver.addHost(FREEPOOL, host.hypervisorHostname);
    this.logger.log({ msg: 'host registered', host: host.hypervisorHostname, id: host.id });
    return toHostWire(host, FREEPOOL);
  }

  /**
   * Sets capabilities (and, with the builtin driver, inventory fields). A value that a
   * pending or active reservation on this host depends on cannot change (409).
   * `reservable: false` marks the host failed and heals its reservations.
   */
  async update(id: string, body: HostUpdateRequest): Promise<HostResponse> {
    if (Object.keys(body).length === 0) throw new InvalidInput('No data to update');
    const fields = splitHostFields(body, []);
    this.checkTopology(fields.capabilities);
    const { host, healNeeded } = await withTransaction(this.dataSource, async (tx) => {
      const now = this.clock.now();
      const host = await this.find(tx, id, true);
      const before = toHostWire(host, null);
      const patch: Partial<Host> = { ...fields.inventory };
      const changed = Object.entries({ ...fields.capabilities, ...this.snake(fields.inventory) })
        .filter(([k, v]) => String(before[k]) !== String(v))
        .map(([k]) => k);
      const inUse = await this.keysInUse(tx, host.id, now);
      const blocked = changed.filter((k) => inUse.has(k));
      if (blocked.length > 0) {
        throw new Conflict(
          `Can't add extracapabilities [${blocked.join(', ')}] to Host ${host.id}`,
          'CantAddExtraCapability',
        );
      }
      await this.assertSlotsFit(tx, host, patch, now);
      patch.capabilities = { ...host.capabilities, ...fields.capabilities };
      const healNeeded = fields.reservable !== undefined && fields.reservable !== host.reservable;
      if (fields.reservable !== undefined) patch.reservable = fields.reservable;
      patch.updatedAt = now;
      await tx.update(Host, { id: host.id }, patch);
      if (fields.reservable !== undefined) {
        // The admin's word replaces the driver's: a host the driver took out and the
        // admin set, stays as the admin set it when the driver reports it up again.
        await clearReportedDown(tx, host.id);
      }
      await this.properties.register(tx, Object.keys(fields.capabilities), now);
      await this.pools.setTopology(tx, host.id, this.topology(patch.capabilities), now);
      return { host: Object.assign(host, patch), healNeeded };
    });
    // The change is made; a heal that fails now (e.g. the compute service is down) is
    // retried by the periodic one.
    if (healNeeded) {
      await this.healing
        .heal()
        .catch((error: unknown) =>
          this.logger.warn({ msg: 'heal after host update failed', error: String(error) }),
        );
    }
    return this.get(String(host.id));
  }

  async delete(id: string): Promise<void> {
    const em = this.dataSource.manager;
    const found = await this.find(em, id);
    await this.assertNoServers(found.hypervisorHostname);
    const pool = await withTransaction(this.dataSource, async (tx) => {
      const host = await this.find(tx, id, true);
      const { rows } = await sql(tx, `SELECT 1 FROM ${HOST_USAGE} a WHERE a.host_id = $1 LIMIT 1`, [
        host.id,
      ]);
      if (rows.length > 0) {
        throw new Conflict(`Can't delete host ${host.id}. The host is reserved.`, 'CantDeleteHost');
      }
      const pool = await this.pools.poolOf(tx, host.id);
      await tx.delete(Host, { id: host.id });
      await this.pools.setTopology(tx, host.id, {}, this.clock.now());
      return pool;
    });
    if (pool !== null) await this.driver.removeHost(pool.name, found.hypervisorHostname);
  }

  /** Moves a host between the reservation pool and the shared pool (admin). */
  async moveToPool(id: string, pool: MovablePool): Promise<HostResponse> {
    const host = await this.find(this.dataSource.manager, id);
    await this.poolMoves.move(host.id, pool);
    return this.get(id);
  }

  async find(em: EntityManager, id: string, lock = false): Promise<Host> {
    const host = HOST_ID.test(id)
      ? await em.findOne(Host, {
          where: { id: Number(id) },
          ...(lock ? { lock: { mode: 'pessimistic_write' as const } } : {}),
        })
      : null;
    if (host === null) throw new NotFound('host_id', id);
    return host;
  }

  /**
   * A host's inventory cannot shrink under the instance slots it carries: at the busiest
   * instant from now on, the slots must still fit the new inventory times the ratios.
   */
  private async assertSlotsFit(
    tx: EntityManager,
    host: Host,
    patch: Partial<Host>,
    now: Date,
  ): Promise<void> {
    const next = {
      vcpus: (patch.vcpus ?? host.vcpus) * this.config.cpuAllocationRatio,
      memory: (patch.memoryMb ?? host.memoryMb) * this.config.ramAllocationRatio,
      disk: (patch.localGb ?? host.localGb) * this.config.diskAllocationRatio,
    };
    const peak = await slotPeak(tx, host.id, now);
    const short = [
      peak.vcpus > next.vcpus ? `vcpus (slots need ${peak.vcpus})` : null,
      peak.memory > next.memory ? `memory_mb (slots need ${peak.memory})` : null,
      peak.disk > next.disk ? `local_gb (slots need ${peak.disk})` : null,
    ].filter((x) => x !== null);
    if (short.length > 0) {
      throw new Conflict(
        `Host ${host.id} carries instance slots that would not fit: ${short.join(', ')}`,
        'HostInUse',
      );
    }
  }

  /** Blazar refuses to register or remove a host that runs servers. */
  private async assertNoServers(host: string): Promise<void> {
    const servers = await this.driver.serversOnHost(host);
    if (servers.length > 0) {
      throw new Conflict(
        `Servers [${servers.map((s) => s.id).join(', ')}] found for host ${host}`,
        'HostHavingServers',
      );
    }
  }

  /** Requirement keys of reservations that hold this host now or later. */
  private async keysInUse(tx: EntityManager, hostId: number, now: Date): Promise<Set<string>> {
    const keys = new Set<string>();
    for (const params of await liveParamsOn(tx, hostId, now)) {
      const req = combine(params.hypervisor_properties ?? '', params.resource_properties ?? '');
      for (const key of requirementKeys(req)) keys.add(key);
    }
    return keys;
  }

  /** A topology label names an aggregate (`rack:r12`, varchar(255)). */
  private checkTopology(capabilities: Record<string, string>): void {
    for (const [level, value] of Object.entries(this.topology(capabilities))) {
      checkLength(level, value, MAX_HOST_TEXT - level.length - 1);
    }
  }

  private topology(capabilities: JsonObject): Record<string, string> {
    const labels: Record<string, string> = {};
    for (const level of this.config.topologyLevels) {
      const value: unknown = capabilities[level];
      if (typeof value === 'string' && value !== '') labels[level] = value;
    }
    return labels;
  }

  private snake(inventory: Record<string, unknown>): Record<string, unknown> {
    return Object.fromEntries(
      Object.entries(inventory).map(([k, v]) => [
        k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`),
        v,
      ]),
    );
  }
}
