import type { Knex } from 'knex';

/**
 * Identity verification (KYC). A session (`verification_sessions`) asks for a tier; what the
 * person submits is personal data and is stored sealed (`*_sealed`: the PII cipher's
 * `<key id>:<ciphertext>`, src/pii-cipher.ts), never in clear. Its documents are uploaded
 * documents linked by kind. A session the provider could not settle waits for an
 * administrator, whose decision (who, when, what, why) stays after the person's data is erased.
 * Users gain the status `closed` (an erased account keeps its row for the ledger, without
 * identifiers). Events of sessions (`verification_session`) and of users (`user.tier_updated`)
 * join the events table: its subject check is widened from whatever it allows now.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('verification_sessions', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('user_id').notNullable().references('users.id');
    t.text('tier').notNullable();
    t.text('status').notNullable().defaultTo('requires_input');
    t.text('last_error_code');
    t.text('last_error_reason');
    t.text('id_type');
    t.text('id_number_sealed');
    t.text('first_name_sealed');
    t.text('last_name_sealed');
    t.text('date_of_birth_sealed');
    t.text('nationality_sealed');
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('submitted_at', { useTz: true });
    t.timestamp('processing_lease_until', { useTz: true });
    t.text('provider_reference');
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('decided_at', { useTz: true });
    t.uuid('reviewer_user_id').references('users.id');
    t.text('review_decision');
    t.text('review_reason_code');
    t.text('review_note_sealed');
    t.text('rejection_kind');
    t.timestamp('personal_data_erased_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['user_id', 'created_at', 'id'], 'verification_sessions_user_index');
  });
  await knex.raw(`ALTER TABLE verification_sessions
    ADD CONSTRAINT verification_sessions_tier CHECK (tier IN ('tier_1', 'tier_2')),
    ADD CONSTRAINT verification_sessions_status CHECK (status IN ('requires_input', 'processing', 'needs_review', 'verified', 'rejected', 'canceled')),
    ADD CONSTRAINT verification_sessions_id_type CHECK (id_type IN ('national_id', 'passport', 'residence_permit', 'driving_licence')),
    ADD CONSTRAINT verification_sessions_review_decision CHECK (review_decision IN ('approved', 'rejected')),
    ADD CONSTRAINT verification_sessions_rejection_kind CHECK (rejection_kind IN ('retry_allowed', 'final')),
    ADD CONSTRAINT verification_sessions_review_named CHECK ((review_decision IS NULL) = (reviewer_user_id IS NULL)),
    ADD CONSTRAINT verification_sessions_no_self_review CHECK (reviewer_user_id IS DISTINCT FROM user_id);
    CREATE INDEX verification_sessions_status_index ON verification_sessions (status, created_at, id);
    CREATE INDEX verification_sessions_due_index ON verification_sessions (processing_lease_until) WHERE status = 'processing'`);

  await knex.schema.createTable('verification_session_documents', (t) => {
    t.uuid('session_id').notNullable().references('verification_sessions.id');
    t.text('kind').notNullable();
    t.uuid('document_id').notNullable().references('uploaded_documents.id');
    t.timestamp('uploaded_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['session_id', 'kind']);
  });
  await knex.raw(`ALTER TABLE verification_session_documents
    ADD CONSTRAINT verification_session_documents_kind CHECK (kind IN ('id_front', 'id_back', 'selfie'))`);

  await knex.raw(`ALTER TABLE users
    DROP CONSTRAINT users_status,
    ADD CONSTRAINT users_status CHECK (status IN ('active', 'locked', 'disabled', 'closed')),
    DROP CONSTRAINT users_identifier_present,
    ADD CONSTRAINT users_identifier_present CHECK (email IS NOT NULL OR phone IS NOT NULL OR status = 'closed'),
    ADD COLUMN closed_at timestamptz`);

  await widenEventSubjects(knex, ['verification_session', 'user']);
}

/**
 * Adds subject types to the events table's check, keeping every type it allows now (another
 * migration may have added its own: the list is read from the constraint, not restated).
 */
async function widenEventSubjects(knex: Knex, added: readonly string[]): Promise<void> {
  const result = (await knex.raw(`SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = 'events_subject_type' AND conrelid = 'events'::regclass`)) as { rows: Array<{ def: string }> };
  const current = [...(result.rows[0]?.def ?? '').matchAll(/'([a-z_]+)'/g)].map((match) => match[1] as string);
  const all = [...new Set([...current, ...added])];
  await knex.raw(`ALTER TABLE events DROP CONSTRAINT IF EXISTS events_subject_type;
    ALTER TABLE events ADD CONSTRAINT events_subject_type CHECK (subject_type IN (${all.map((type) => `'${type}'`).join(', ')}))`);
}

export async function down(knex: Knex): Promise<void> {
  // The events are append-only: identity events stay, so the narrower check applies to new rows only.
  const result = (await knex.raw(`SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = 'events_subject_type' AND conrelid = 'events'::regclass`)) as { rows: Array<{ def: string }> };
  const kept = [...(result.rows[0]?.def ?? '').matchAll(/'([a-z_]+)'/g)].map((match) => match[1] as string).filter((type) => type !== 'verification_session' && type !== 'user');
  await knex.raw(`ALTER TABLE events DROP CONSTRAINT events_subject_type;
    ALTER TABLE events ADD CONSTRAINT events_subject_type CHECK (subject_type IN (${kept.map((type) => `'${type}'`).join(', ')})) NOT VALID`);
  await knex.raw(`ALTER TABLE users DROP COLUMN closed_at,
    DROP CONSTRAINT users_identifier_present, ADD CONSTRAINT users_identifier_present CHECK (email IS NOT NULL OR phone IS NOT NULL) NOT VALID,
    DROP CONSTRAINT users_status, ADD CONSTRAINT users_status CHECK (status IN ('active', 'locked', 'disabled')) NOT VALID`);
  await knex.schema.dropTable('verification_session_documents');
  await knex.schema.dropTable('verification_sessions');
}
