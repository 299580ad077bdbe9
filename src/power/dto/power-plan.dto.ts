import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { HostPowerResponse } from '../../hosts/dto/host-power.dto.js';

export class HostHoursOffResponse {
  @ApiProperty({ description: 'Host-hours powered off over the past 30 days' })
  past_30_days!: number;

  @ApiProperty({ description: 'Host-hours the plan keeps off over the next 30 days' })
  next_30_days!: number;
}

/** Hosts per power state, the whole fleet. */
export class PowerStatesResponse {
  @ApiProperty({ type: 'integer' })
  on!: number;

  @ApiProperty({ type: 'integer' })
  off!: number;

  @ApiProperty({ type: 'integer' })
  booting!: number;

  @ApiProperty({ type: 'integer' })
  stopping!: number;
}

/** GET /v1/power-plan: the fleet's figures, and a page of hosts. */
export class PowerPlanBody {
  @ApiProperty({ description: 'POWER_PLAN=on; off, every host is kept on' })
  enabled!: boolean;

  @ApiProperty({ type: 'integer', description: 'POWER_OFF_IDLE_MINUTES' })
  off_idle_minutes!: number;

  @ApiProperty({ type: 'integer', description: 'POWER_BOOT_SECONDS' })
  boot_seconds!: number;

  @ApiProperty({ type: 'integer', description: 'PROVISIONING_LEAD_MINUTES' })
  provisioning_lead_minutes!: number;

  @ApiProperty({ type: HostHoursOffResponse, description: 'The whole fleet, whatever the filters' })
  host_hours_off!: HostHoursOffResponse;

  @ApiProperty({ type: PowerStatesResponse, description: 'The whole fleet, whatever the filters' })
  power_states!: PowerStatesResponse;

  @ApiProperty({
    type: [HostPowerResponse],
    description: 'A page of the hosts the filters select, by id',
  })
  hosts!: HostPowerResponse[];

  @ApiPropertyOptional({
    description: 'The next page (path and query, the same filters); absent on the last page',
    example: '/v1/power-plan?limit=100&marker=100',
  })
  next?: string;
}
