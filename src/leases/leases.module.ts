import { Module } from '@nestjs/common';
import { EnforcementModule } from '../enforcement/enforcement.module.js';
import { LeaseWires } from '../enforcement/lease-wires.js';
import { NotificationsModule } from '../notifications/notifications.module.js';
import { LeaseRemover } from '../plugins/lease-remover.js';
import { PluginsModule } from '../plugins/plugins.module.js';
import { ReservationsModule } from '../reservations/reservations.module.js';
import { CreateCompute } from './create-compute.js';
import { LeaseCreator } from './lease-creator.js';
import { LeaseDeleter } from './lease-deleter.js';
import { LeaseNotifier } from './lease-notifier.js';
import { LeaseUpdater } from './lease-updater.js';
import { LeaseWireMapper } from './lease-wire-mapper.js';
import { LeasesController } from './leases.controller.js';
import { LeasesRepository } from './leases.repository.js';
import { LeasesService } from './leases.service.js';

/**
 * The lease use cases. They fill two ports of the floors below: enforcement's LeaseWires
 * (the bodies it sends) and the plugins' LeaseRemover (an upkeep ends a lease).
 */
@Module({
  imports: [ReservationsModule, EnforcementModule, NotificationsModule, PluginsModule],
  controllers: [LeasesController],
  providers: [
    LeasesService,
    LeaseCreator,
    CreateCompute,
    LeaseUpdater,
    LeasesRepository,
    LeaseDeleter,
    LeaseNotifier,
    LeaseWireMapper,
  ],
  exports: [LeasesRepository, LeasesService, LeaseDeleter, LeaseNotifier],
})
export class LeasesModule {
  constructor(
    wires: LeaseWires,
    mapper: LeaseWireMapper,
    remover: LeaseRemover,
    deleter: LeaseDeleter,
  ) {
    wires.register(mapper);
    remover.register(deleter);
  }
}
