import type { operations } from '../../../generated/openapi';
import type { EscrowCaller } from './escrow-presenter';
import type { EscrowCommand, EscrowService } from './escrow-service';

/**
 * The escrow operations of the contract as plain functions, keyed by operationId: a typed
 * input (path, query, body, the Idempotency-Key header, the authenticated caller) in, the
 * response's status, headers and data out. No HTTP framework here: an adapter mounts them.
 */

type Operation = keyof operations;
type Parameters<O extends Operation> = operations[O]['parameters'];
type PathOf<O extends Operation> = Parameters<O> extends { path: infer P } ? P : Record<string, never>;
type QueryOf<O extends Operation> = Parameters<O> extends { query?: infer Q } ? NonNullable<Q> : Record<string, never>;
type BodyOf<O extends Operation> = operations[O] extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
type ResponsesOf<O extends Operation> = operations[O]['responses'];
type DataOf<O extends Operation, S extends keyof ResponsesOf<O>> = ResponsesOf<O>[S] extends { content: { 'application/json': { data: infer D } } } ? D : never;

export interface HandlerInput<O extends Operation> {
  caller: EscrowCaller;
  path: PathOf<O>;
  query: QueryOf<O>;
  /** Undefined when the request had no body (allowed where the contract says the body is optional). */
  body: BodyOf<O> | undefined;
  idempotencyKey: string | undefined;
}

export interface HandlerResult<O extends Operation, S extends keyof ResponsesOf<O> & number> {
  status: S;
  headers?: Record<string, string>;
  data: DataOf<O, S>;
}

type Handler<O extends Operation, S extends keyof ResponsesOf<O> & number> = (input: HandlerInput<O>) => Promise<HandlerResult<O, S>>;

export interface EscrowHandlers {
  listEscrows: Handler<'listEscrows', 200>;
  createEscrow: Handler<'createEscrow', 201>;
  getEscrow: Handler<'getEscrow', 200>;
  fundEscrow: Handler<'fundEscrow', 200>;
  deliverEscrow: Handler<'deliverEscrow', 200>;
  acceptEscrow: Handler<'acceptEscrow', 200>;
  disputeEscrow: Handler<'disputeEscrow', 200>;
  refundEscrow: Handler<'refundEscrow', 200>;
  cancelEscrow: Handler<'cancelEscrow', 200>;
  resolveEscrow: Handler<'resolveEscrow', 200>;
  listAllEscrows: Handler<'listAllEscrows', 200>;
}

export function escrowHandlers(escrows: EscrowService): EscrowHandlers {
  const action = async (input: { caller: EscrowCaller; path: { escrowId: string }; idempotencyKey: string | undefined }, command: EscrowCommand) => ({
    status: 200 as const,
    data: await escrows.act(input.caller, input.path.escrowId, command, input.idempotencyKey),
  });
  return {
    listEscrows: async ({ caller, query }) => ({
      status: 200,
      data: await escrows.list(caller, { status: query.status, role: query.role, limit: query.limit ?? 50, startingAfter: query.starting_after }),
    }),
    createEscrow: async ({ caller, body, idempotencyKey }) => {
      if (!body) throw new TypeError('createEscrow has a required body (the validator checked it)');
      const data = await escrows.create(caller, idempotencyKey ?? '', {
        role: body.role,
        counterpartyIdentifier: body.counterparty_identifier,
        amount: body.amount,
        currency: body.currency,
        description: body.description,
        inspectionPeriodSeconds: body.inspection_period_seconds,
        reference: body.reference,
        feePayer: body.fee_payer,
      });
      return { status: 201, headers: { Location: `/api/escrows/${data.id}` }, data };
    },
    getEscrow: async ({ caller, path }) => ({ status: 200, data: await escrows.get(caller, path.escrowId) }),
    fundEscrow: (input) => action(input, { action: 'fund' }),
    deliverEscrow: (input) => action(input, { action: 'deliver', trackingReference: input.body?.tracking_reference, note: input.body?.note }),
    acceptEscrow: (input) => action(input, { action: 'accept' }),
    disputeEscrow: (input) => action(input, { action: 'dispute', reason: input.body?.reason ?? '' }),
    refundEscrow: (input) => action(input, { action: 'refund' }),
    cancelEscrow: (input) => action(input, { action: 'cancel' }),
    resolveEscrow: (input) => {
      if (!input.body) throw new TypeError('resolveEscrow has a required body (the validator checked it)');
      return action(input, { action: 'resolve', outcome: input.body.outcome, sellerAmount: input.body.seller_amount, note: input.body.note });
    },
    listAllEscrows: async ({ caller, query }) => ({
      status: 200,
      data: await escrows.listAll(caller, { status: query.status, limit: query.limit ?? 50, startingAfter: query.starting_after }),
    }),
  };
}
