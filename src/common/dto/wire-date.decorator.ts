import { ApiProperty, type ApiPropertyOptions } from '@nestjs/swagger';

/** Lease, event and allocation dates (formatWireDate): 2017-12-26T12:00:00.000000, UTC. */
export function ApiWireDate(options: ApiPropertyOptions = {}): PropertyDecorator {
  return ApiProperty({
    type: 'string',
    pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{6}$',
    example: '2030-01-01T12:00:00.000000',
    ...options,
  });
}

/** created_at / updated_at (formatTimestamp): 2017-12-27 10:00:00, UTC; null if never. */
export function ApiTimestamp(options: ApiPropertyOptions = {}): PropertyDecorator {
  return ApiProperty({
    type: 'string',
    pattern: '^\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}$',
    example: '2030-01-01 12:00:00',
    ...options,
  });
}

/** How dates are written in requests (parseInputDate). */
export const INPUT_DATE_FORMATS = '"YYYY-MM-DD HH:MM" (UTC), "now", or RFC 3339 with an offset';
