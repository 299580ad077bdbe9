import { Module } from '@nestjs/common';
import { LeasesModule } from '../leases/leases.module.js';
import { ReservationsModule } from '../reservations/reservations.module.js';
import { EventRunner } from './event-runner.js';
import { EventsRepository } from './events.repository.js';
import { ManagerService } from './manager.service.js';

@Module({
  imports: [LeasesModule, ReservationsModule],
  providers: [EventsRepository, EventRunner, ManagerService],
  exports: [ManagerService],
})
export class EventsModule {}
