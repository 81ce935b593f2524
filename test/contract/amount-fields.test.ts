import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { beforeAll, describe, expect, it } from 'vitest';
import { contractDocument, resolveRef, type Json } from '../support/contract-document';
import { testKnex } from '../support/database';

/**
 * A request the contract accepts must never be saved and then answered 500 because a response
 * schema is stricter (a 0.001 KWD tontine under `minimum: 0.01`). Every amount field of
 * the contract, in requests and responses alike and for every resource, must accept the
 * smallest unit of every supported currency (the currencies table: XOF 1, EUR 0.01, KWD 0.001,
 * ...); what is finer than a given currency allows is the service's check, per currency.
 */
const doc = contractDocument;
const resolve = resolveRef;

const escape = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');

type Kind = 'number' | 'decimal' | 'minor';
interface AmountField {
  pointer: string;
  kind: Kind;
}

const DECIMAL = /DecimalAmount\.yaml$|\/DecimalAmount$/;
const MINOR = /MinorAmount\.yaml$|\/MinorAmount$/;
/** Money by name: the numbers and decimal strings of amounts, prices, fees, balances and positions. */
const MONEY_NAME = /amount|price|total|fee|balance|position|collected|available|required|remaining|requested|refunded|to_seller|to_buyer/;

function kindOf(name: string, schema: Json): Kind | undefined {
  const ref = typeof schema.$ref === 'string' ? schema.$ref : '';
  if (MINOR.test(ref)) return 'minor';
  if (DECIMAL.test(ref)) return 'decimal';
  if (!MONEY_NAME.test(name)) return undefined;
  const resolved = resolve(schema);
  const types = ([] as unknown[]).concat(resolved.type ?? []);
  if (types.includes('number')) return 'number';
  if (types.includes('string') && typeof resolved.pattern === 'string') return name.endsWith('_minor') ? 'minor' : /\\\./.test(resolved.pattern) ? 'decimal' : undefined;
  return undefined;
}

/** Every amount property under `schema` (at `pointer`), through properties, items and unions. */
function collect(schema: unknown, pointer: string, found: Map<string, AmountField>, seen: Set<unknown>): void {
  const node = schema as Json;
  if (!node || typeof node !== 'object') return;
  if (typeof node.$ref === 'string') {
    const target = (node.$ref as string).replace(/^#/, '');
    if (seen.has(target)) return;
    seen.add(target);
    collect(resolve(node), target, found, seen);
    return;
  }
  for (const [name, property] of Object.entries((node.properties as Json | undefined) ?? {})) {
    const at = `${pointer}/properties/${escape(name)}`;
    const kind = kindOf(name, property as Json);
    if (kind) found.set(at, { pointer: at, kind });
    collect(property, at, found, seen);
  }
  if (node.items) collect(node.items, `${pointer}/items`, found, seen);
  for (const union of ['oneOf', 'anyOf', 'allOf'] as const) {
    (node[union] as unknown[] | undefined)?.forEach((option, i) => collect(option, `${pointer}/${union}/${i}`, found, seen));
  }
}

function amountFields(): AmountField[] {
  const found = new Map<string, AmountField>();
  const seen = new Set<unknown>();
  for (const [name, schema] of Object.entries((doc.components as Json).schemas as Json)) collect(schema, `/components/schemas/${escape(name)}`, found, seen);
  for (const [path, item] of Object.entries(doc.paths as Json)) {
    for (const [method, op] of Object.entries(item as Json)) {
      const operation = op as Json;
      if (!operation || typeof operation !== 'object' || !operation.responses) continue;
      const base = `/paths/${escape(path)}/${method}`;
      const body = resolve(operation.requestBody);
      for (const [type, content] of Object.entries((body?.content as Json | undefined) ?? {})) collect((content as Json).schema, `${base}/requestBody/content/${escape(type)}/schema`, found, seen);
      for (const [status, response] of Object.entries(operation.responses as Json)) {
        for (const [type, content] of Object.entries((resolve(response).content as Json | undefined) ?? {})) {
          collect((content as Json).schema, `${base}/responses/${status}/content/${escape(type)}/schema`, found, seen);
        }
      }
    }
  }
  return [...found.values()];
}

/** The smallest unit of a currency of exponent `e`, as each kind of field writes it. */
function smallestUnit(kind: Kind, exponent: number): number | string {
  if (kind === 'minor') return '1';
  const decimal = exponent === 0 ? '1' : `0.${'0'.repeat(exponent - 1)}1`;
  return kind === 'number' ? Number(decimal) : decimal;
}

/** The stablecoins (codes beyond ISO 4217's three letters) are held in wallets and moved by the crypto routes only: the fields those answer carry them. */
const carriesStablecoins = (field: AmountField): boolean => /Wallet|Crypto|crypto|InsufficientFunds/.test(field.pointer);

let currencies: Array<{ code: string; exponent: number }> = [];
beforeAll(async () => {
  currencies = (await testKnex()('currencies').select('code', 'exponent').orderBy('code')) as Array<{ code: string; exponent: number }>;
});

describe('amount fields follow the currency minor unit', () => {
  const ajv = new Ajv({ strict: false, validateSchema: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ ...doc, $id: 'contract' });
  const fields = amountFields();

  it('finds the amount fields of every resource, in requests and responses', () => {
    const names = new Set(fields.map((f) => f.pointer.replace(/.*\/components\/schemas\/([^/]+)\/.*\/([^/]+)$|.*\/components\/schemas\/([^/]+)\/properties\/([^/]+)$/, '$1$3.$2$4')));
    for (const expected of [
      'Tontine.contribution_amount',
      'CreateTontineRequest.contribution_amount',
      'Escrow.amount',
      'CreateEscrowRequest.amount',
      'ResolveEscrowRequest.seller_amount',
      'Transfer.amount',
      'CreateTransferRequest.amount',
      'PaymentLink.amount',
      'CreatePaymentLinkRequest.amount',
      'Payment.amount',
    ]) {
      expect(names, expected).toContain(expected);
    }
    expect([...names].some((n) => n.startsWith('Invoice'))).toBe(true);
    expect(fields.length).toBeGreaterThan(40);
  });

  it('each amount field accepts the smallest unit of every supported currency', () => {
    expect(currencies.map((c) => c.exponent).sort()).toEqual(expect.arrayContaining([0, 2, 3]));
    const refused: string[] = [];
    for (const field of fields) {
      const validate = ajv.getSchema(`contract#${field.pointer}`);
      if (!validate) throw new Error(`no schema at ${field.pointer}`);
      for (const { code, exponent } of currencies) {
        if (!/^[A-Z]{3}$/.test(code) && !carriesStablecoins(field)) continue;
        const value = smallestUnit(field.kind, exponent);
        if (!validate(value)) refused.push(`${field.pointer} refuses ${JSON.stringify(value)} (${code}): ${ajv.errorsText(validate.errors)}`);
      }
    }
    expect(refused).toEqual([]);
  });
});
