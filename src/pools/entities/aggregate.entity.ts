import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { JsonObject } from '../../common/json.js';

export type AggregateKind =
  'freepool' | 'shared' | 'recycle' | 'reservation' | 'instance' | 'topology';

/**
 * A host aggregate: the freepool, the shared pool, the recycle pool, one pool per
 * started host reservation (named by the reservation id), and topology labels.
 */
@Entity({ name: 'aggregates' })
export class Aggregate {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column({ type: 'varchar', length: 255 })
  name!: string;

  @Column({ type: 'varchar', length: 16 })
  kind!: AggregateKind;

  @Column({ name: 'availability_zone', type: 'varchar', length: 255, nullable: true })
  availabilityZone!: string | null;

  @Column({ type: 'jsonb', default: () => "'{}'" })
  metadata!: JsonObject;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', nullable: true })
  updatedAt!: Date | null;
}
