import { ApiProperty } from '@nestjs/swagger';

/** Blazar's error body, as the global filter writes it for every error. */
export class ErrorResponse {
  @ApiProperty({ description: 'The HTTP status', example: 404 })
  error_code!: number;

  @ApiProperty({ example: "Object with {'lease_id': 'x'} not found" })
  error_message!: string;

  @ApiProperty({ description: 'A stable symbolic name of the error', example: 'NotFound' })
  error_name!: string;
}
