import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { LeaseStatus } from './lease-status.js';

/** A user-defined event as stored (leases/user-events.ts): shown, never run. */
export interface StoredUserEvent {
  id: string;
  event_type: string | null;
  time: string | null;
  status: string | null;
  created_at: string;
}

@Entity({ name: 'leases' })
export class Lease {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ type: 'varchar', length: 255 })
  name!: string;

  @Column({ name: 'project_id', type: 'varchar', length: 255 })
  projectId!: string;

  @Column({ name: 'user_id', type: 'varchar', length: 255 })
  userId!: string;

  @Column({ name: 'start_at', type: 'timestamptz' })
  startAt!: Date;

  @Column({ name: 'end_at', type: 'timestamptz' })
  endAt!: Date;

  @Column({ type: 'varchar', length: 16 })
  status!: LeaseStatus;

  @Column({ type: 'boolean', default: false })
  degraded!: boolean;

  /** Bumped on every change; compared with If-Match. */
  @Column({ type: 'integer', default: 1 })
  version!: number;

  @Column({ name: 'trust_id', type: 'varchar', length: 36, nullable: true })
  trustId!: string | null;

  /** User-defined events, never run; null: none. */
  @Column({ name: 'user_events', type: 'jsonb', nullable: true })
  userEvents!: StoredUserEvent[] | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', nullable: true })
  updatedAt!: Date | null;
}
