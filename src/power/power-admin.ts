import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock.js';
import { NotFound } from '../common/errors.js';
import { withTransaction } from '../database/transaction.js';
import type { HostPowerResponse } from '../hosts/dto/host-power.dto.js';
import { shareLockHost } from '../pools/hosts.repository.js';
import { PowerReport } from './power-report.js';
import { PowerRepository } from './power.repository.js';

const HOST_ID = /^[0-9]{1,9}$/;

/** The admin's "always on" mark: a marked host is never powered off (one that is, goes on). */
@Injectable()
export class PowerAdmin {
  private readonly logger = new Logger('power');

  constructor(
    private readonly dataSource: DataSource,
    private readonly repo: PowerRepository,
    private readonly report: PowerReport,
    private readonly clock: Clock,
  ) {}

  async setAlwaysOn(id: string, alwaysOn: boolean): Promise<HostPowerResponse> {
    if (!HOST_ID.test(id)) throw new NotFound('host_id', id);
    const hostId = Number(id);
    await withTransaction(this.dataSource, async (tx) => {
      // The host row locked: it cannot be deleted under the mark.
      if (!(await shareLockHost(tx, hostId))) throw new NotFound('host_id', id);
      await this.repo.setAlwaysOn(tx, hostId, alwaysOn, this.clock.now());
    });
    this.logger.log({ msg: 'always-on mark set', host_id: hostId, always_on: alwaysOn });
    return this.report.host(hostId);
  }
}
