import { Module } from '@nestjs/common';
import { ReservationsModule } from '../reservations/reservations.module.js';
import { LeaseUpdater } from './lease-updater.js';
import { LeasesController } from './leases.controller.js';
import { LeasesRepository } from './leases.repository.js';
import { LeasesService } from './leases.service.js';

@Module({
  imports: [ReservationsModule],
  controllers: [LeasesController],
  providers: [LeasesService, LeaseUpdater, LeasesRepository],
  exports: [LeasesRepository, LeasesService],
})
export class LeasesModule {}
