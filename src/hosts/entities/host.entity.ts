import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { JsonObject } from '../../common/json.js';

/** A compute host Climate can reserve (Blazar's computehosts). */
@Entity({ name: 'hosts' })
export class Host {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column({ name: 'hypervisor_hostname', type: 'varchar', length: 255 })
  hypervisorHostname!: string;

  @Column({ name: 'service_name', type: 'varchar', length: 255 })
  serviceName!: string;

  @Column({ type: 'integer' })
  vcpus!: number;

  @Column({ name: 'memory_mb', type: 'integer' })
  memoryMb!: number;

  @Column({ name: 'local_gb', type: 'integer' })
  localGb!: number;

  @Column({ name: 'hypervisor_type', type: 'varchar', length: 255 })
  hypervisorType!: string;

  @Column({ name: 'hypervisor_version', type: 'integer' })
  hypervisorVersion!: number;

  @Column({ name: 'cpu_info', type: 'text' })
  cpuInfo!: string;

  @Column({ name: 'availability_zone', type: 'varchar', length: 255 })
  availabilityZone!: string;

  @Column({ type: 'boolean', default: true })
  reservable!: boolean;

  /** Extra capabilities, string values, flattened into the host object on the wire. */
  @Column({ type: 'jsonb', default: () => "'{}'" })
  capabilities!: JsonObject;

  @Column({ name: 'trust_id', type: 'varchar', length: 36, nullable: true })
  trustId!: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', nullable: true })
  updatedAt!: Date | null;
}
