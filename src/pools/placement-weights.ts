import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { sql } from '../database/sql.js';
import { repriceHosts } from './hosts.repository.js';

/**
 * Copies HOST_WEIGHTS into placement_weights at startup and, when they changed, brings
 * every host's placement_cost up to date (see the PlacementCost migration). Replicas
 * should agree on HOST_WEIGHTS: the last one started wins.
 */
@Injectable()
export class PlacementWeights implements OnModuleInit {
  private readonly logger = new Logger('placement');

  constructor(
    private readonly dataSource: DataSource,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  async onModuleInit(): Promise<void> {
    const wanted = [...this.config.hostWeights].sort(([a], [b]) => a.localeCompare(b));
    await this.dataSource.transaction(async (tx) => {
      // One replica at a time; readers (picks) never wait on it.
      await sql(tx, `LOCK TABLE placement_weights IN EXCLUSIVE MODE`);
      const { rows } = await sql<{ property: string; weight: number }>(
        tx,
        `SELECT property, weight FROM placement_weights ORDER BY property COLLATE "C"`,
      );
      const same =
        rows.length === wanted.length &&
        [...this.config.hostWeights].every(([p, w]) =>
          rows.some((r) => r.property === p && r.weight === w),
        );
      if (same) return;
      await sql(tx, `DELETE FROM placement_weights`);
      await sql(
        tx,
        `INSERT INTO placement_weights (property, weight)
         SELECT * FROM unnest($1::text[], $2::int[])`,
        [wanted.map(([p]) => p), wanted.map(([, w]) => w)],
      );
      const repriced = await repriceHosts(tx);
      this.logger.log({ msg: 'placement weights changed', hosts_repriced: repriced });
    });
  }
}
