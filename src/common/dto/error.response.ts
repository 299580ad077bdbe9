import { ApiProperty } from '@nestjs/swagger';

/** Blazar's error body, as the global filter writes it for every error. */
export class ErrorResponse {
  @ApiProperty({ description: 'The HTTP status', example: 404 })
  error_code!: number;

  @ApiProperty({ example: "Object with {'lease_id': 'x'} not found" })
  error_message!: string;

  @ApiProperty({
    oneOf: [{ type: 'integer' }, { type: 'string', enum: ['INTERNAL_SERVER_ERROR'] }],
    description:
      "As Blazar's: the HTTP status again; INTERNAL_SERVER_ERROR for an unexpected failure",
    example: 404,
  })
  error_name!: number | 'INTERNAL_SERVER_ERROR';

  @ApiProperty({
    description: 'A stable symbolic name of the error (beyond Blazar)',
    example: 'NotFound',
  })
  error_type!: string;
}
