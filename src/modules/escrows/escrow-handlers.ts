import { pageRequest, type Caller, type Handlers } from '../../contract';
import type { EscrowCommand, EscrowService } from './escrow-service';

type EscrowOperation =
  | 'listEscrows'
  | 'createEscrow'
  | 'getEscrow'
  | 'fundEscrow'
  | 'deliverEscrow'
  | 'acceptEscrow'
  | 'disputeEscrow'
  | 'refundEscrow'
  | 'cancelEscrow'
  | 'resolveEscrow'
  | 'listAllEscrows';

/** The escrow operations of the contract, keyed by operationId (the validator checked every input). */
export function escrowHandlers(escrows: EscrowService): Handlers<EscrowOperation> {
  // An action answers 200 with the escrow; the money-moving ones carry an Idempotency-Key.
  const act = async (caller: Caller, escrowId: string, command: EscrowCommand, idempotencyKey?: string) => ({
    data: await escrows.act(caller, escrowId, command, idempotencyKey),
  });
  return {
    listEscrows: async ({ caller, query }) => ({
      data: await escrows.list(caller, { status: query.status, role: query.role, ...pageRequest(query) }),
    }),
    async createEscrow({ caller, headers, body }) {
      const data = await escrows.create(caller, headers['Idempotency-Key'], {
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
    getEscrow: async ({ caller, path }) => ({ data: await escrows.get(caller, path.escrowId) }),
    fundEscrow: ({ caller, path, headers }) => act(caller, path.escrowId, { action: 'fund' }, headers['Idempotency-Key']),
    deliverEscrow: ({ caller, path, body }) =>
      act(caller, path.escrowId, { action: 'deliver', trackingReference: body?.tracking_reference, note: body?.note }),
    acceptEscrow: ({ caller, path, headers }) => act(caller, path.escrowId, { action: 'accept' }, headers['Idempotency-Key']),
    disputeEscrow: ({ caller, path, body }) => act(caller, path.escrowId, { action: 'dispute', reason: body.reason }),
    refundEscrow: ({ caller, path, headers }) => act(caller, path.escrowId, { action: 'refund' }, headers['Idempotency-Key']),
    cancelEscrow: ({ caller, path }) => act(caller, path.escrowId, { action: 'cancel' }),
    resolveEscrow: ({ caller, path, headers, body }) =>
      act(caller, path.escrowId, { action: 'resolve', outcome: body.outcome, sellerAmount: body.seller_amount, note: body.note }, headers['Idempotency-Key']),
    listAllEscrows: async ({ caller, query }) => ({
      data: await escrows.listAll(caller, { status: query.status, ...pageRequest(query) }),
    }),
  };
}
