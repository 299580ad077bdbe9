import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { EventStatus, EventType } from './event-status.js';

@Entity({ name: 'events' })
export class LeaseEvent {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ name: 'lease_id', type: 'uuid' })
  leaseId!: string;

  @Column({ name: 'event_type', type: 'varchar', length: 32 })
  eventType!: EventType;

  @Column({ type: 'timestamptz' })
  time!: Date;

  @Column({ type: 'varchar', length: 16 })
  status!: EventStatus;

  @Column({ type: 'integer', default: 0 })
  attempts!: number;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError!: string | null;

  /** Earliest time of the next attempt after a failure. */
  @Column({ name: 'retry_at', type: 'timestamptz', nullable: true })
  retryAt!: Date | null;

  @Column({ name: 'claimed_by', type: 'varchar', length: 255, nullable: true })
  claimedBy!: string | null;

  @Column({ name: 'claim_expires_at', type: 'timestamptz', nullable: true })
  claimExpiresAt!: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', nullable: true })
  updatedAt!: Date | null;
}
