import { Injectable } from '@nestjs/common';
import { Port } from '../common/port.js';
import type { HostPowerResponse } from './dto/host-power.dto.js';

/** The admin's "always on" mark of a host, and the host's power as the plan has it. */
export interface HostPowerMarks {
  setAlwaysOn(id: string, alwaysOn: boolean): Promise<HostPowerResponse>;
}

/**
 * Where PUT /v1/os-hosts/{id}/power goes: the power plan (power/, a process above hosts)
 * registers itself into it, so that one controller serves every /v1/os-hosts route.
 */
@Injectable()
export class HostPowerPort extends Port<HostPowerMarks> implements HostPowerMarks {
  constructor() {
    super('HostPowerMarks (the power plan, PowerModule)');
  }

  setAlwaysOn(id: string, alwaysOn: boolean): Promise<HostPowerResponse> {
    return this.target.setAlwaysOn(id, alwaysOn);
  }
}
