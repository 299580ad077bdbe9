import { ApiProperty, type ApiPropertyOptions } from '@nestjs/swagger';

/** Each check by name: {status: 'up' | 'down', …what it found}. */
const checks = (description: string): ApiPropertyOptions => ({
  type: 'object',
  description,
  additionalProperties: {
    type: 'object',
    properties: { status: { type: 'string', enum: ['up', 'down'] } },
    required: ['status'],
    additionalProperties: true,
  },
});

/** terminus' answer: the overall status and each check's result. */
export class HealthResponse {
  @ApiProperty({ enum: ['ok', 'error', 'shutting_down'] })
  status!: 'ok' | 'error' | 'shutting_down';

  @ApiProperty(checks('The checks that passed'))
  info!: Record<string, unknown>;

  @ApiProperty(checks('The checks that failed'))
  error!: Record<string, unknown>;

  @ApiProperty(checks('Every check'))
  details!: Record<string, unknown>;
}
