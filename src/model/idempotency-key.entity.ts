import type { JsonObject } from '../common/json.js';
import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A create request seen before: replayed for the same body, refused for another. */
@Entity({ name: 'idempotency_keys' })
export class IdempotencyKey {
  @PrimaryColumn({ name: 'project_id', type: 'varchar', length: 255 })
  projectId!: string;

  @PrimaryColumn({ type: 'varchar', length: 255 })
  key!: string;

  @Column({ name: 'request_hash', type: 'varchar', length: 64 })
  requestHash!: string;

  @Column({ type: 'jsonb' })
  response!: JsonObject;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
