import { ApiSchema, type ApiSchemaOptions, type SchemaObject } from '@nestjs/swagger';

/**
 * Keys a class's objects carry besides its properties (a host's extra capabilities).
 * Every other object schema is closed (openapi.ts), so the schema test sees any key a
 * response has that its class does not declare.
 */
export function ApiAdditionalProperties(values: SchemaObject | boolean): ClassDecorator {
  // @ApiSchema merges its options into the class's schema as they are.
  return ApiSchema({ additionalProperties: values } as ApiSchemaOptions);
}
