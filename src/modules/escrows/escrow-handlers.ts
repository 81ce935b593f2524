import { pageRequest, type Caller, type Handlers, type Transaction } from '../../contract';
import { escrowResource } from './escrow-presenter';
import type { EscrowCommand, EscrowService } from './escrow-service';

export { escrowResource };

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

/**
 * The escrow actions on the one write path (src/modules/writes): each claims its
 * Idempotency-Key in the statement that locks the escrow, and completes it in the statement
 * that applies its decision. Fund and accept are applied a window at a time (APPLIED_IN_WINDOW);
 * the others, refund and resolve included, one request in one transaction (the pipeline's).
 */
export const escrowWritePath = ['fundEscrow', 'deliverEscrow', 'acceptEscrow', 'disputeEscrow', 'refundEscrow', 'cancelEscrow', 'resolveEscrow'] as const satisfies readonly EscrowOperation[];

/** The escrow operations of the contract, keyed by operationId (the validator checked every input). */
export function escrowHandlers(escrows: EscrowService): Handlers<EscrowOperation> {
  // An action answers 200 with the escrow, in the pipeline's transaction (its Idempotency-Key completes in it).
  const act = async (trx: Transaction, caller: Caller, escrowId: string, command: EscrowCommand) => {
    const data = await escrows.act(trx, caller, escrowId, command);
    return { data, resource: escrowResource(data) };
  };
  return {
    listEscrows: async ({ caller, query }) => ({
      data: await escrows.list(caller, { status: query.status, role: query.role, ...pageRequest(query) }),
    }),
    async createEscrow({ caller, trx, body }) {
      const data = await escrows.create(trx, caller, {
        role: body.role,
        counterpartyIdentifier: body.counterparty_identifier,
        amount: body.amount,
        currency: body.currency,
        description: body.description,
        inspectionPeriodSeconds: body.inspection_period_seconds,
        reference: body.reference,
        feePayer: body.fee_payer,
      });
      return { status: 201, headers: { Location: `/api/escrows/${data.id}` }, data, resource: escrowResource(data) };
    },
    getEscrow: async ({ caller, path }) => ({ data: await escrows.get(caller, path.escrowId) }),
    // Applied a window at a time (APPLIED_IN_WINDOW): the pipeline hands the key over, not a transaction.
    fundEscrow: async ({ key, caller, path }) => ({ data: await escrows.actInWindow(key, caller, path.escrowId, 'fund') }),
    deliverEscrow: ({ trx, caller, path, body }) =>
      act(trx, caller, path.escrowId, { action: 'deliver', trackingReference: body?.tracking_reference, note: body?.note }),
    acceptEscrow: async ({ key, caller, path }) => ({ data: await escrows.actInWindow(key, caller, path.escrowId, 'accept') }),
    disputeEscrow: ({ trx, caller, path, body }) => act(trx, caller, path.escrowId, { action: 'dispute', reason: body.reason }),
    refundEscrow: ({ trx, caller, path }) => act(trx, caller, path.escrowId, { action: 'refund' }),
    cancelEscrow: ({ trx, caller, path }) => act(trx, caller, path.escrowId, { action: 'cancel' }),
    resolveEscrow: ({ trx, caller, path, body }) =>
      act(trx, caller, path.escrowId, { action: 'resolve', outcome: body.outcome, sellerAmount: body.seller_amount, note: body.note }),
    listAllEscrows: async ({ caller, query }) => ({
      data: await escrows.listAll(caller, { status: query.status, ...pageRequest(query) }),
    }),
  };
}
