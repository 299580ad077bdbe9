/**
 * A JSON object as stored in jsonb columns (reservation params, stored responses).
 * `any` here because TypeORM's deep-partial types reject `unknown` values.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type JsonObject = { [key: string]: any };
