import { describe, expect, it } from 'vitest';
import contract from '../../generated/openapi.bundled.json';
import { EVENT_OBJECT_TYPES, EVENT_TYPES } from '../../src/modules/events';

interface Schema {
  $ref?: string;
  allOf?: Schema[];
  properties?: Record<string, { const?: string }>;
}
const schemas = (contract as unknown as { components: { schemas: Record<string, Schema> } }).components.schemas;
const webhooks = (contract as unknown as { webhooks: Record<string, { post: { requestBody: { content: { 'application/json': { schema: Schema } } } } }> }).webhooks;

/** The `type` and `object_type` constants of a webhook's payload schema. */
function documented(name: string): { type?: string; objectType?: string } {
  const ref = webhooks[name]?.post.requestBody.content['application/json'].schema.$ref ?? '';
  const own = schemas[ref.replace('#/components/schemas/', '')]?.allOf?.find((part) => part.properties);
  return { type: own?.properties?.type?.const, objectType: own?.properties?.object_type?.const };
}

describe('the event types the platform emits are the ones the contract documents under webhooks', () => {
  const payloads = Object.keys(webhooks).map(documented);

  it('every emitted type has its webhook payload, with its object type', () => {
    for (const type of EVENT_TYPES) expect(payloads, type).toContainEqual({ type, objectType: EVENT_OBJECT_TYPES[type] });
  });

  it('every documented webhook is a type the platform emits (escrow.accepted is not one: accept releases)', () => {
    expect(payloads.map((p) => p.type).sort()).toEqual([...EVENT_TYPES].sort());
    expect(EVENT_TYPES).not.toContain('escrow.accepted');
  });
});
