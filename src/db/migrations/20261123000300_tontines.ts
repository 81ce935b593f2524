import type { Knex } from 'knex';

/**
 * Tontines (rotating savings groups). The money lives in the ledger: each tontine has one
 * platform `tontine_pool` account (external_ref = the tontine id) that holds the open cycle's
 * contributions; these tables say who takes part, the schedule and who paid what.
 *
 * - `tontines`: the group and its state (`forming` -> `active` -> `completed`, or `canceled`).
 *   `seed_commitment` = hex(SHA-256(draw_seed)) is public from creation; `draw_seed` is shown
 *   only once the tontine started (random order).
 * - `tontine_members`: `join_number` orders members as they joined (the organizer is 1);
 *   `payout_position` is the cycle each member receives, fixed at the start.
 * - `tontine_invitations`: one row per invited user, `open` until they join.
 * - `tontine_cycles`: the schedule, written at the start (cycle k due k periods later).
 * - `tontine_contributions`: one row per member and opened cycle; `pending` -> `paid`, or
 *   `late` (due and unpaid, still payable) -> `paid`, and `paid` -> `refunded` on cancel.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('tontines', (t) => {
    t.uuid('id').primary();
    t.text('name').notNullable();
    t.uuid('organizer_user_id').notNullable().references('users.id');
    t.specificType('currency', 'char(3)').notNullable().references('currencies.code');
    t.bigInteger('contribution_minor').notNullable();
    t.text('frequency').notNullable();
    t.integer('max_members').notNullable();
    t.text('payout_order').notNullable();
    t.text('status').notNullable().defaultTo('forming');
    t.text('seed_commitment').notNullable();
    t.text('draw_seed').notNullable();
    t.integer('current_cycle').notNullable().defaultTo(0);
    t.uuid('pool_account_id').notNullable().references('ledger_accounts.id');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('started_at', { useTz: true });
    t.timestamp('completed_at', { useTz: true });
    t.timestamp('canceled_at', { useTz: true });
    t.unique(['pool_account_id'], { indexName: 'tontines_pool_account_unique' });
  });
  await knex.raw(`ALTER TABLE tontines
    ADD CONSTRAINT tontines_name_length CHECK (length(name) BETWEEN 1 AND 120),
    ADD CONSTRAINT tontines_contribution_positive CHECK (contribution_minor > 0),
    ADD CONSTRAINT tontines_frequency CHECK (frequency IN ('weekly', 'biweekly', 'monthly')),
    ADD CONSTRAINT tontines_max_members CHECK (max_members BETWEEN 2 AND 50),
    ADD CONSTRAINT tontines_payout_order CHECK (payout_order IN ('join_order', 'random')),
    ADD CONSTRAINT tontines_status CHECK (status IN ('forming', 'active', 'completed', 'canceled')),
    ADD CONSTRAINT tontines_seed_format CHECK (seed_commitment ~ '^[0-9a-f]{64}$' AND draw_seed ~ '^[0-9a-f]{64}$'),
    ADD CONSTRAINT tontines_cycle_range CHECK (current_cycle BETWEEN 0 AND 50),
    ADD CONSTRAINT tontines_started CHECK ((status = 'forming') = (started_at IS NULL) OR (status = 'canceled' AND started_at IS NULL)),
    ADD CONSTRAINT tontines_running_cycle CHECK ((status = 'active') <= (current_cycle >= 1)),
    ADD CONSTRAINT tontines_completed CHECK ((status = 'completed') = (completed_at IS NOT NULL)),
    ADD CONSTRAINT tontines_canceled CHECK ((status = 'canceled') = (canceled_at IS NOT NULL))`);
  await knex.raw(`CREATE INDEX tontines_late_marking ON tontines (id) WHERE status = 'active'`);

  await knex.schema.createTable('tontine_members', (t) => {
    t.uuid('tontine_id').notNullable().references('tontines.id');
    t.uuid('user_id').notNullable().references('users.id');
    t.text('role').notNullable();
    t.integer('join_number').notNullable();
    t.integer('payout_position');
    t.timestamp('joined_at', { useTz: true }).notNullable();
    t.primary(['tontine_id', 'user_id']);
    t.unique(['tontine_id', 'join_number'], { indexName: 'tontine_members_join_number_unique' });
    t.unique(['tontine_id', 'payout_position'], { indexName: 'tontine_members_position_unique' });
  });
  await knex.raw(`ALTER TABLE tontine_members
    ADD CONSTRAINT tontine_members_role CHECK (role IN ('organizer', 'member')),
    ADD CONSTRAINT tontine_members_join_number CHECK (join_number >= 1),
    ADD CONSTRAINT tontine_members_position CHECK (payout_position IS NULL OR payout_position BETWEEN 1 AND 50);
    CREATE UNIQUE INDEX tontine_members_one_organizer ON tontine_members (tontine_id) WHERE role = 'organizer';
    CREATE INDEX tontine_members_by_user ON tontine_members (user_id, tontine_id);`);

  await knex.schema.createTable('tontine_invitations', (t) => {
    t.uuid('tontine_id').notNullable().references('tontines.id');
    t.uuid('user_id').notNullable().references('users.id');
    t.uuid('invited_by_user_id').notNullable().references('users.id');
    t.text('status').notNullable().defaultTo('open');
    t.timestamp('invited_at', { useTz: true }).notNullable();
    t.primary(['tontine_id', 'user_id']);
  });
  await knex.raw(`ALTER TABLE tontine_invitations
    ADD CONSTRAINT tontine_invitations_status CHECK (status IN ('open', 'accepted', 'lapsed'))`);

  await knex.schema.createTable('tontine_cycles', (t) => {
    t.uuid('tontine_id').notNullable().references('tontines.id');
    t.integer('number').notNullable();
    t.uuid('beneficiary_user_id').notNullable().references('users.id');
    t.timestamp('due_at', { useTz: true }).notNullable();
    t.text('status').notNullable().defaultTo('upcoming');
    t.uuid('payout_posting_id').references('postings.id');
    t.timestamp('paid_out_at', { useTz: true });
    t.primary(['tontine_id', 'number']);
    // One payout per member over the whole tontine.
    t.unique(['tontine_id', 'beneficiary_user_id'], { indexName: 'tontine_cycles_one_payout_per_member' });
  });
  await knex.raw(`ALTER TABLE tontine_cycles
    ADD CONSTRAINT tontine_cycles_number CHECK (number BETWEEN 1 AND 50),
    ADD CONSTRAINT tontine_cycles_status CHECK (status IN ('upcoming', 'open', 'paid_out', 'canceled')),
    ADD CONSTRAINT tontine_cycles_paid_out CHECK ((status = 'paid_out') = (payout_posting_id IS NOT NULL AND paid_out_at IS NOT NULL))`);

  await knex.schema.createTable('tontine_contributions', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('tontine_id').notNullable();
    t.integer('cycle_number').notNullable();
    t.uuid('user_id').notNullable();
    t.text('status').notNullable().defaultTo('pending');
    t.uuid('posting_id').references('postings.id');
    t.uuid('refund_posting_id').references('postings.id');
    t.timestamp('paid_at', { useTz: true });
    t.timestamp('late_at', { useTz: true });
    t.timestamp('refunded_at', { useTz: true });
    t.unique(['tontine_id', 'cycle_number', 'user_id'], { indexName: 'tontine_contributions_one_per_member_and_cycle' });
    t.foreign(['tontine_id', 'cycle_number']).references(['tontine_id', 'number']).inTable('tontine_cycles');
    t.foreign(['tontine_id', 'user_id']).references(['tontine_id', 'user_id']).inTable('tontine_members');
  });
  await knex.raw(`ALTER TABLE tontine_contributions
    ADD CONSTRAINT tontine_contributions_status CHECK (status IN ('pending', 'paid', 'late', 'refunded')),
    ADD CONSTRAINT tontine_contributions_paid CHECK ((status IN ('paid', 'refunded')) = (posting_id IS NOT NULL AND paid_at IS NOT NULL)),
    ADD CONSTRAINT tontine_contributions_refunded CHECK ((status = 'refunded') = (refund_posting_id IS NOT NULL AND refunded_at IS NOT NULL))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('tontine_contributions');
  await knex.schema.dropTable('tontine_cycles');
  await knex.schema.dropTable('tontine_invitations');
  await knex.schema.dropTable('tontine_members');
  await knex.schema.dropTable('tontines');
}
