import Ajv from 'ajv';
import { describe, expect, it } from 'vitest';
import { installValidatorSchemaPruning, prunedSchema } from '../../src/http/validator-schema-pruning';

const components = {
  schemas: {
    Transfer: { type: 'object', required: ['amount'], properties: { amount: { $ref: '#/components/schemas/Amount' }, note: { $ref: '#/components/schemas/Note' } } },
    Amount: { type: 'string', pattern: '^[0-9]+$' },
    Note: { type: 'string', maxLength: 5 },
    Unused: { type: 'integer' },
    'Slash/Name': { type: 'boolean' },
    Cat: { type: 'object', properties: { kind: { const: 'cat' } } },
    Dog: { type: 'object', properties: { kind: { const: 'dog' } } },
  },
  parameters: { Limit: { schema: { $ref: '#/components/schemas/Amount' } }, Other: { schema: { type: 'string' } } },
};
const paths = { '/transfers': { post: { requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Transfer' } } } } } } };

function bodySchema(body: unknown) {
  return { paths, components, required: ['body'], properties: { query: {}, headers: {}, params: {}, body } };
}

describe('the validator schemas, cut to what they reach', () => {
  it('keeps the components a schema reaches, through references of references, and nothing else; drops the paths', () => {
    const pruned = prunedSchema(bodySchema({ $ref: '#/components/schemas/Transfer' }));
    expect(pruned.paths).toBeUndefined();
    expect(pruned.components).toEqual({ schemas: { Transfer: components.schemas.Transfer, Amount: components.schemas.Amount, Note: components.schemas.Note } });
    expect(pruned.required).toEqual(['body']);
  });

  it('follows references into every section, escaped names and the targets of a discriminator mapping', () => {
    const pruned = prunedSchema(
      bodySchema({
        allOf: [{ $ref: '#/components/parameters/Limit/schema' }, { $ref: '#/components/schemas/Slash~1Name' }],
        oneOf: [{ type: 'object' }],
        discriminator: { propertyName: 'kind', mapping: { cat: '#/components/schemas/Cat', dog: '#/components/schemas/Dog' } },
      }),
    );
    expect(pruned.components).toEqual({
      parameters: { Limit: components.parameters.Limit },
      schemas: { Amount: components.schemas.Amount, 'Slash/Name': components.schemas['Slash/Name'], Cat: components.schemas.Cat, Dog: components.schemas.Dog },
    });
  });

  it('hands over the whole schema when a reference leads into the paths, elsewhere, or to a component that does not exist', () => {
    for (const ref of ['#/paths/~1transfers/post', 'other.yaml#/Thing', '#/components/schemas/Missing']) {
      const whole = bodySchema({ $ref: ref });
      expect(prunedSchema(whole)).toBe(whole);
    }
  });

  it('validates exactly as the whole schema does', () => {
    const ajv = new Ajv({ strict: false });
    const whole = ajv.compile(bodySchema({ $ref: '#/components/schemas/Transfer' }));
    const pruned = new Ajv({ strict: false }).compile(prunedSchema(bodySchema({ $ref: '#/components/schemas/Transfer' })));
    for (const body of [{ amount: '12' }, { amount: '1.5' }, { amount: '12', note: 'too long' }, {}, { amount: 12 }]) {
      expect(pruned({ query: {}, headers: {}, params: {}, body }), JSON.stringify(body)).toBe(whole({ query: {}, headers: {}, params: {}, body }));
    }
    expect(pruned({ query: {}, headers: {}, params: {}, body: { amount: '12' } })).toBe(true);
    expect(pruned({ query: {}, headers: {}, params: {}, body: { amount: '1.5' } })).toBe(false);
  });

  it('compiles through the library with the schema cut, and reuses what it compiled under the same key', () => {
    installValidatorSchemaPruning();
    const util = require(require.resolve('express-openapi-validator/dist/middlewares/util.js')) as {
      useAjvCache: (ajv: Ajv, schema: Record<string, unknown>, key: string) => ((data: unknown) => boolean) & { schema: Record<string, unknown> };
    };
    const ajv = new Ajv({ strict: false });
    const validate = util.useAjvCache(ajv, bodySchema({ $ref: '#/components/schemas/Transfer' }), 'post-/transfers');
    expect(Object.keys((validate.schema.components as { schemas: object }).schemas).sort()).toEqual(['Amount', 'Note', 'Transfer']);
    expect(validate({ query: {}, headers: {}, params: {}, body: { amount: 'x' } })).toBe(false);
    expect(util.useAjvCache(ajv, bodySchema({ $ref: '#/components/schemas/Transfer' }), 'post-/transfers')).toBe(validate);
  });
});
