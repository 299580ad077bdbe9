import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { LeaseWireMapping } from '../enforcement/lease-wires.js';
import { PluginRegistry } from '../plugins/plugin-registry.js';
import type { LeaseResponse } from './dto/lease.response.js';
import { describeAll, toLeaseWire, type LeaseParts } from './lease.mapper.js';

/** A lease as the API shows it, read in `em` (for enforcement's bodies). */
@Injectable()
export class LeaseWireMapper implements LeaseWireMapping {
  constructor(private readonly plugins: PluginRegistry) {}

  async wire(em: EntityManager, parts: LeaseParts): Promise<LeaseResponse> {
    return toLeaseWire(parts, this.plugins, await describeAll(em, [parts], this.plugins));
  }
}
