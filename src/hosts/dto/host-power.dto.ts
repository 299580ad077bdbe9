import { ApiProperty } from '@nestjs/swagger';
import { leftOut, Present, WellFormed } from '../../common/dto/rules.js';
import { ApiWireDate } from '../../common/dto/wire-date.decorator.js';
import { BodyRules } from '../../common/validation.pipe.js';
import { booleanProblem } from '../host-fields.js';

export const POWER_STATES = ['on', 'off', 'booting', 'stopping'] as const;

export class PowerTransitionResponse {
  @ApiWireDate({ description: 'When the power plan switches the host (UTC)' })
  at!: string;

  @ApiProperty({ enum: ['on', 'off'] })
  to!: 'on' | 'off';
}

/** One host's power: its state now and its planned transitions over the next 30 days. */
export class HostPowerResponse {
  @ApiProperty({ pattern: '^[0-9]+$', example: '1' })
  id!: string;

  @ApiProperty()
  hypervisor_hostname!: string;

  @ApiProperty({ enum: POWER_STATES })
  power_state!: (typeof POWER_STATES)[number];

  @ApiProperty({ description: "An admin's mark: never powered off" })
  always_on!: boolean;

  @ApiProperty({ description: 'Servers were found on it when the plan last looked: kept on' })
  holds_servers!: boolean;

  @ApiProperty({
    description:
      'The power plan may switch it off: reservable, in the freepool, not marked ' +
      'always on, holding no servers',
  })
  in_plan!: boolean;

  @ApiProperty({ type: [PowerTransitionResponse] })
  transitions!: PowerTransitionResponse[];
}

/** PUT /v1/os-hosts/{id}/power: the power plan's mark (docs/power.md); nothing else. */
@BodyRules({ otherKeys: 'refused' })
export class HostPowerRequest {
  @ApiProperty({ description: 'true: the power plan never powers the host off' })
  @Present('always_on', leftOut)
  @WellFormed(
    (value) => booleanProblem('always_on', value)?.message ?? null,
    'MalformedParameter',
    leftOut,
  )
  always_on!: boolean;
}

export class HostPowerBody {
  @ApiProperty({ type: HostPowerResponse })
  host!: HostPowerResponse;
}
