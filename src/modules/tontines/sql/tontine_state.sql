-- What an action on a tontine needs besides its row, as one member sees it, as json: the
-- members (join order) with their identifiers, the cycles (number order) with their
-- beneficiary's identifier, paid count and held payout (when its pot was held), the open cycle's and the member's contributions, the
-- member's open invitation, the pool's balance (its account by id). Each part is an index scan
-- of one tontine. VOLATILE on purpose (plpgsql is never inlined): in READ COMMITTED each query
-- takes a snapshot of its own when it runs, so called on the row a `SELECT ... FOR UPDATE`
-- locked after waiting for another transaction, it sees what that transaction wrote (a plain
-- subquery would keep the statement's snapshot from before the wait).
-- This file is what runs today: src/db/database-functions.ts applies it (CREATE OR REPLACE) and
-- test/integration/database-functions.test.ts fails when the database's function differs.
CREATE OR REPLACE FUNCTION tontine_state(p_tontine_id uuid, p_cycle integer, p_user_id uuid, p_pool_account_id uuid)
RETURNS json
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RETURN json_build_object(
    'members', (SELECT coalesce(json_agg(json_build_object('user_id', m.user_id, 'role', m.role, 'join_number', m.join_number,
        'payout_position', m.payout_position, 'joined_at', m.joined_at, 'identifier', coalesce(u.email, u.phone)) ORDER BY m.join_number), '[]'::json)
       FROM tontine_members m LEFT JOIN users u ON u.id = m.user_id WHERE m.tontine_id = p_tontine_id),
    'cycles', (SELECT coalesce(json_agg(json_build_object('number', c.number, 'beneficiary_user_id', c.beneficiary_user_id, 'due_at', c.due_at,
        'status', c.status, 'payout_posting_id', c.payout_posting_id, 'paid_out_at', c.paid_out_at, 'identifier', coalesce(u.email, u.phone),
        'payout', (SELECT json_build_object('id', h.id, 'status', h.status, 'reason', h.reason, 'held_at', h.held_at, 'settled_at', h.settled_at)
                     FROM held_payouts h WHERE h.id = c.held_payout_id),
        'paid', (SELECT count(*) FROM tontine_contributions k WHERE k.tontine_id = c.tontine_id AND k.cycle_number = c.number AND k.status = 'paid')) ORDER BY c.number), '[]'::json)
       FROM tontine_cycles c LEFT JOIN users u ON u.id = c.beneficiary_user_id WHERE c.tontine_id = p_tontine_id),
    'contributions', (SELECT coalesce(json_agg(json_build_object('id', k.id, 'cycle_number', k.cycle_number, 'user_id', k.user_id, 'status', k.status,
        'posting_id', k.posting_id, 'paid_at', k.paid_at) ORDER BY k.cycle_number, k.user_id), '[]'::json)
       FROM tontine_contributions k WHERE k.tontine_id = p_tontine_id AND (k.cycle_number = p_cycle OR k.user_id = p_user_id)),
    'invited', EXISTS (SELECT 1 FROM tontine_invitations i WHERE i.tontine_id = p_tontine_id AND i.user_id = p_user_id AND i.status = 'open'),
    'pool_balance_minor', (SELECT a.balance_minor::text FROM ledger_accounts a WHERE a.id = p_pool_account_id));
END;
$$;
