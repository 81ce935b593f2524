import crypto from 'node:crypto';
import { ConflictError, UnprocessableError, ValidationError } from '../../errors';

/** What an Idempotency-Key may be: 1 to 255 printable ASCII characters without spaces. */
export const KEY_FORMAT = /^[\x21-\x7E]{1,255}$/;

/** Canonical JSON: object keys sorted at every level, so key order never changes the hash. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'bigint') return JSON.stringify(value.toString());
    return JSON.stringify(value) ?? 'null';
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

export function requestHash(request: unknown): string {
  return crypto.createHash('sha256').update(canonicalJson(request)).digest('hex');
}

export function validateIdempotencyKey(key: unknown): string {
  if (typeof key !== 'string' || key.length === 0) {
    throw ValidationError.field('header.idempotency-key', 'The Idempotency-Key header is required for this operation.');
  }
  if (!KEY_FORMAT.test(key)) {
    throw ValidationError.field('header.idempotency-key', 'The Idempotency-Key must be 1 to 255 printable ASCII characters without spaces.');
  }
  return key;
}

/** What a completed key produced, as a replay reports it. */
export interface ProducedResource {
  resourceType: string;
  resourceId: string;
  /** The resource's current status. */
  status: string;
  resourceLocation: string | null;
}


/** 409 IdempotencyKeyAlreadyProcessed, naming the resource the key produced and its Location. */
export function keyAlreadyProcessed(produced: ProducedResource): ConflictError {
  return new ConflictError(
    'IdempotencyKeyAlreadyProcessed',
    'This Idempotency-Key was already processed; details name the resource it produced (fetch it instead of retrying).',
    { resource_type: produced.resourceType, resource_id: produced.resourceId, status: produced.status },
    produced.resourceLocation ? { Location: produced.resourceLocation } : undefined,
  );
}

/** 422 IdempotencyKeyReused, naming what the key produced when it produced something. */
export function keyReused(operation: string, produced?: ProducedResource): UnprocessableError {
  return new UnprocessableError(
    'IdempotencyKeyReused',
    'This Idempotency-Key was already used with a different request. Use a new key for a new request.',
    produced
      ? { operation, resource_type: produced.resourceType, resource_id: produced.resourceId, status: produced.status }
      : { operation },
    produced?.resourceLocation ? { Location: produced.resourceLocation } : undefined,
  );
}
