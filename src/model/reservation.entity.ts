import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { JsonObject } from '../common/json.js';
import type { ReservationStatus } from './reservation-status.js';

@Entity({ name: 'reservations' })
export class Reservation {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ name: 'lease_id', type: 'uuid' })
  leaseId!: string;

  @Column({ name: 'resource_type', type: 'varchar', length: 66 })
  resourceType!: string;

  /** Id of the plugin-side object (Blazar's resource_id). */
  @Column({ name: 'resource_id', type: 'varchar', length: 255, nullable: true })
  resourceId!: string | null;

  @Column({ type: 'varchar', length: 16 })
  status!: ReservationStatus;

  @Column({ name: 'missing_resources', type: 'boolean', default: false })
  missingResources!: boolean;

  @Column({ name: 'resources_changed', type: 'boolean', default: false })
  resourcesChanged!: boolean;

  /** The plugin's typed parameters, as validated by the plugin. */
  @Column({ type: 'jsonb', default: () => "'{}'" })
  params!: JsonObject;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', nullable: true })
  updatedAt!: Date | null;
}
