import { Inject, Injectable, Logger } from '@nestjs/common';
import { TrustsService } from '../compute/trusts.service.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import type { Reservation } from '../model/reservation.entity.js';
import { callPlugin, PluginRegistry } from '../plugins/plugin-registry.js';
import type { LeaseParts } from './lease.mapper.js';

/**
 * A create's side in the compute service: the objects Blazar makes with a lease (its
 * reservations' flavors, server groups and aggregates), made before the create's
 * transaction, and undone when the create fails (Blazar leaves them behind).
 */
@Injectable()
export class CreateCompute {
  private readonly logger = new Logger('leases');

  constructor(
    private readonly plugins: PluginRegistry,
    private readonly trusts: TrustsService,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /**
   * What the new reservations show from their create on is made in the compute service
   * first (Blazar's flavor, server group and aggregate), outside any transaction; a
   * compute service that cannot be reached fails the create (503) with nothing written.
   * The keys it returns are stored with the reservation by the create's statement.
   */
  async make(parts: LeaseParts, attempted: Reservation[]): Promise<void> {
    for (const r of parts.reservations) {
      const plugin = this.plugins.get(r.resourceType);
      if (plugin.materialize === undefined) continue;
      attempted.push(r);
      const keys = await callPlugin(
        plugin,
        'create',
        () => plugin.materialize!(r, parts.lease),
        this.config.pluginTimeoutMs,
      );
      r.params = { ...r.params, ...keys };
    }
  }

  /**
   * A create that failed or was answered by an earlier one (its key) leaves nothing in
   * the compute service: what `materialize` made (or began) is discarded, then the trust.
   */
  async undo(parts: LeaseParts, attempted: Reservation[]): Promise<void> {
    const { lease } = parts;
    for (const r of attempted) {
      const plugin = this.plugins.get(r.resourceType);
      if (plugin.discard === undefined) continue;
      try {
        await callPlugin(
          plugin,
          'discard',
          () => plugin.discard!(r, lease),
          this.config.pluginTimeoutMs,
        );
      } catch (error) {
        // The create's own error is the answer; this one is for the operator.
        this.logger.warn({
          msg: 'compute objects of a failed create left behind',
          reservation_id: r.id,
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
    await this.trusts.delete(lease.trustId);
  }
}
