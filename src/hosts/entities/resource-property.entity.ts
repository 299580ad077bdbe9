import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** A capability name ever used on a host; private ones are hidden from the catalogue. */
@Entity({ name: 'resource_properties' })
export class ResourceProperty {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column({ name: 'resource_type', type: 'varchar', length: 255 })
  resourceType!: string;

  @Column({ name: 'property_name', type: 'varchar', length: 64 })
  propertyName!: string;

  @Column({ type: 'boolean', default: false })
  private!: boolean;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', nullable: true })
  updatedAt!: Date | null;
}
