import crypto from 'node:crypto';
import { externalClearingAccount, post } from '../../src/modules/ledger';
import { testKnex } from './database';

export interface PostedMovement {
  postingId: string;
  amountMinor: bigint;
}

/**
 * Moves money between the outside world (the external clearing account of the currency) and an
 * organisation account, through the LedgerService, in its own transaction: a positive amount is
 * received, a negative one paid out.
 */
export async function moveMoney(
  account: { ledgerAccountId: string; currency: string },
  amountMinor: bigint,
  metadata: Record<string, unknown> = {},
  kind = amountMinor > 0n ? 'test.payment_received' : 'test.payout',
): Promise<PostedMovement> {
  if (amountMinor === 0n) throw new TypeError('a movement is never zero');
  return testKnex().transaction(async (trx) => {
    const clearing = await externalClearingAccount(trx, account.currency);
    const posting = await post(trx, {
      kind,
      reference: crypto.randomUUID(),
      metadata,
      entries: [
        { accountId: clearing.id, amountMinor: -amountMinor },
        { accountId: account.ledgerAccountId, amountMinor },
      ],
    });
    return { postingId: posting.id, amountMinor };
  });
}

/**
 * Books `count` balanced postings onto the account with set-based SQL (two entries each: the
 * account is credited `amountMinor`, the external clearing account debited), booked one
 * `stepMs` apart from `start`, in transactions of `chunk` postings. Bypasses ledger_post for
 * speed and back-dating only; every posting is balanced and both balances move with their
 * entries (the invariant checks of the suite prove it). For statement volume tests.
 */
export async function bulkCredit(
  account: { ledgerAccountId: string; currency: string },
  count: number,
  options: { start: Date; stepMs: number; amountMinor: bigint; chunk?: number; description?: string },
): Promise<void> {
  const knex = testKnex();
  const clearing = await externalClearingAccount(knex, account.currency);
  const chunk = options.chunk ?? 200;
  const batch = crypto.randomUUID();
  for (let offset = 0; offset < count; offset += chunk) {
    const size = Math.min(chunk, count - offset);
    await knex.transaction(async (trx) => {
      await trx.raw(
        `CREATE TEMP TABLE bulk_postings ON COMMIT DROP AS
           SELECT gen_random_uuid() AS id, ?::timestamptz + make_interval(secs => (g * ?::double precision) / 1000) AS at, g
             FROM generate_series(?::int, ?::int) AS g`,
        [options.start.toISOString(), options.stepMs, offset, offset + size - 1],
      );
      // Historical rows for volume: written directly (ledger_post books at now()), which only
      // a transaction that raises ledger_post's flag may do; balances move here instead.
      await trx.raw("SELECT set_config('ledger.posting', 'on', true)");
      await trx.raw(
        `INSERT INTO postings (id, kind, reference, metadata, created_at)
           SELECT id, 'test.bulk_credit', ? || ':' || g,
                  jsonb_strip_nulls(jsonb_build_object('reference', 'BULK-' || g, 'description', ?::text)), at FROM bulk_postings`,
        [batch, options.description ?? null],
      );
      await trx.raw(
        `INSERT INTO entries (posting_id, account_id, currency, amount_minor, created_at)
           SELECT id, ?::uuid, ?::char(3), ?::bigint, at FROM bulk_postings
           UNION ALL
           SELECT id, ?::uuid, ?::char(3), -(?::bigint), at FROM bulk_postings`,
        [
          account.ledgerAccountId,
          account.currency,
          options.amountMinor.toString(),
          clearing.id,
          account.currency,
          options.amountMinor.toString(),
        ],
      );
      await trx.raw(
        `UPDATE ledger_accounts SET balance_minor = balance_minor + CASE WHEN id = ?::uuid THEN 1 ELSE -1 END * ?::bigint * ?::bigint, updated_at = now()
          WHERE id IN (?::uuid, ?::uuid)`,
        [account.ledgerAccountId, options.amountMinor.toString(), size, account.ledgerAccountId, clearing.id],
      );
    });
    // Each chunk rewrites the two balance rows: vacuum now and then, as autovacuum would,
    // so the dead row versions do not pile up.
    if ((offset / chunk) % 50 === 49) await knex.raw('VACUUM ledger_accounts');
  }
  await knex.raw('VACUUM ANALYZE ledger_accounts, postings, entries');
}
