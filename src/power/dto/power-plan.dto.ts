import { ApiProperty } from '@nestjs/swagger';
import { HostPowerResponse } from '../../hosts/dto/host-power.dto.js';

export class HostHoursOffResponse {
  @ApiProperty({ description: 'Host-hours powered off over the past 30 days' })
  past_30_days!: number;

  @ApiProperty({ description: 'Host-hours the plan keeps off over the next 30 days' })
  next_30_days!: number;
}

/** GET /v1/power-plan. */
export class PowerPlanBody {
  @ApiProperty({ description: 'POWER_PLAN=on; off, every host is kept on' })
  enabled!: boolean;

  @ApiProperty({ type: 'integer', description: 'POWER_OFF_IDLE_MINUTES' })
  off_idle_minutes!: number;

  @ApiProperty({ type: 'integer', description: 'POWER_BOOT_SECONDS' })
  boot_seconds!: number;

  @ApiProperty({ type: 'integer', description: 'PROVISIONING_LEAD_MINUTES' })
  provisioning_lead_minutes!: number;

  @ApiProperty({ type: HostHoursOffResponse })
  host_hours_off!: HostHoursOffResponse;

  @ApiProperty({ type: [HostPowerResponse] })
  hosts!: HostPowerResponse[];
}
