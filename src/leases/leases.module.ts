import { CreateCompute } from './create-compute.js';
import { Global, Module } from '@nestjs/common';
import { EnforcementModule } from '../enforcement/enforcement.module.js';
import { LeaseCreator } from './lease-creator.js';
import { LeaseDeleter } from './lease-deleter.js';
import { NotificationsModule } from '../notifications/notifications.module.js';
import { ReservationsModule } from '../reservations/reservations.module.js';
import { LeaseWires } from '../enforcement/lease-wires.js';
import { LeaseNotifier } from './lease-notifier.js';
import { LeaseWireMapper } from './lease-wire-mapper.js';
import { LeaseUpdater } from './lease-updater.js';
import { LeaseRemover } from '../plugins/lease-remover.js';
import { LeasesController } from './leases.controller.js';
import { LeasesRepository } from './leases.repository.js';
import { LeasesService } from './leases.service.js';

/** Global: the manager's upkeep finishes deletes that did not finish. */
@Global()
@Module({
  imports: [ReservationsModule, EnforcementModule, NotificationsModule],
  controllers: [LeasesController],
  providers: [
    LeasesService,
    LeaseCreator,
    CreateCompute,
    LeaseUpdater,
    LeasesRepository,
    LeaseDeleter,
    LeaseNotifier,
    { provide: LeaseWires, useClass: LeaseWireMapper },
    { provide: LeaseRemover, useExisting: LeaseDeleter },
  ],
  exports: [LeasesRepository, LeasesService, LeaseDeleter, LeaseRemover, LeaseNotifier, LeaseWires],
})
export class LeasesModule {}
