import { ApiProperty } from '@nestjs/swagger';

export class VersionLink {
  @ApiProperty({ example: 'http://127.0.0.1:1234/v1' })
  href!: string;

  @ApiProperty({ enum: ['self'] })
  rel!: 'self';
}

export class ApiVersion {
  @ApiProperty({ example: 'v1.0' })
  id!: string;

  @ApiProperty({ enum: ['CURRENT', 'SUPPORTED', 'DEPRECATED'] })
  status!: 'CURRENT' | 'SUPPORTED' | 'DEPRECATED';

  @ApiProperty({ type: [VersionLink] })
  links!: VersionLink[];

  @ApiProperty({ example: '1.0' })
  min_version!: string;

  @ApiProperty({ example: '1.0' })
  max_version!: string;
}

/** Version discovery, answered with 300 Multiple Choices as Blazar does. */
export class VersionsResponse {
  @ApiProperty({ type: [ApiVersion] })
  versions!: ApiVersion[];
}
