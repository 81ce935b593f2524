/** Ids the platform hands out: row ids are UUIDs (gen_random_uuid() or crypto.randomUUID()). */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * True when `value` is written as a UUID (any version, either case). Check an id from outside
 * before it reaches a uuid column: PostgreSQL refuses a malformed one with an error, not a miss.
 */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
