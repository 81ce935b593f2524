import type { Knex } from 'knex';
import { setEventSubjects } from '../event-subjects';

/**
 * Money in: top-ups of a wallet by mobile money.
 *
 * - top_ups: a request to the payer's mobile-money provider to pay `amount_minor` into a wallet,
 *   `pending` until the rail reports it (`succeeded`: credited from the rail's clearing account,
 *   `posting_id`; `failed` with the rail's `failure_code`; `reversed`: the ledger refused the
 *   credit, the money goes back to the payer). `provider_reference` is the reference the rail
 *   knows it by, unique: callbacks find the top-up by it.
 * - rail_callbacks: the `webhook-id` of every signed rail callback accepted, so a replayed one is
 *   refused; kept a day (its timestamp is refused after five minutes anyway).
 * - events: top-ups are event subjects.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('top_ups', (t) => {
    t.uuid('id').primary();
    t.uuid('user_id').notNullable().references('users.id');
    t.uuid('wallet_id').notNullable().references('ledger_accounts.id');
    t.specificType('currency', 'char(3)').notNullable().references('currencies.code');
    t.bigInteger('amount_minor').notNullable();
    t.text('method').notNullable();
    t.text('provider').notNullable();
    t.text('msisdn').notNullable();
    t.text('status').notNullable();
    t.text('provider_reference').notNullable();
    t.text('failure_code');
    t.uuid('posting_id').references('postings.id');
    t.timestamp('settled_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
  });
  await knex.raw(`ALTER TABLE top_ups
    ADD CONSTRAINT top_ups_amount CHECK (amount_minor > 0),
    ADD CONSTRAINT top_ups_method CHECK (method = 'mobile_money'),
    ADD CONSTRAINT top_ups_provider CHECK (provider IN ('orange_money', 'mtn_momo', 'moov_money', 'wave')),
    ADD CONSTRAINT top_ups_msisdn CHECK (msisdn ~ '^\\+[1-9][0-9]{6,14}$'),
    ADD CONSTRAINT top_ups_status CHECK (status IN ('pending', 'succeeded', 'failed', 'reversed')),
    ADD CONSTRAINT top_ups_credited CHECK ((status = 'succeeded') = (posting_id IS NOT NULL)),
    ADD CONSTRAINT top_ups_provider_reference UNIQUE (provider_reference)`);
  await knex.raw('CREATE INDEX top_ups_wallet_created ON top_ups (wallet_id, created_at DESC, id DESC)');
  await knex.raw(`CREATE INDEX top_ups_pending ON top_ups (created_at) WHERE status = 'pending'`);

  await knex.schema.createTable('rail_callbacks', (t) => {
    t.text('webhook_id').primary();
    t.timestamp('received_at', { useTz: true }).notNullable();
  });
  await knex.raw('CREATE INDEX rail_callbacks_received ON rail_callbacks (received_at)');

  await setEventSubjects(knex, (current) => [...new Set([...current, 'top_up'])]);
}

export async function down(knex: Knex): Promise<void> {
  await setEventSubjects(knex, (current) => current.filter((type) => type !== 'top_up'));
  await knex.schema.dropTable('rail_callbacks');
  await knex.schema.dropTable('top_ups');
}
