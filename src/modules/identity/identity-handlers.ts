import type { Knex } from 'knex';
import { pageRequest, toListPage, type Handlers } from '../../contract';
import { UnsupportedDocumentTypeError } from '../documents';
import { presentAdminSession, presentSession } from './identity-presenter';
import type { IdentityService } from './identity-service';

type IdentityOperation =
  | 'createVerificationSession'
  | 'listVerificationSessions'
  | 'getVerificationSession'
  | 'submitVerificationSession'
  | 'uploadVerificationDocument'
  | 'cancelVerificationSession'
  | 'listAllVerificationSessions'
  | 'approveVerificationSession'
  | 'rejectVerificationSession'
  | 'closeAccount';

const resource = (session: { id: string; status: string }) => ({ type: 'verification_session', id: session.id, status: session.status, location: `/api/identity/verification-sessions/${session.id}` });

/** Identity verification sessions, their review, and closing an account. */
export function identityHandlers(identity: IdentityService, clock: () => Date, endSessions: (userId: string, trx: Knex.Transaction) => Promise<unknown>): Handlers<IdentityOperation> {
  return {
    async createVerificationSession({ trx, caller, body }) {
      const session = await identity.create(trx, caller, body.tier);
      return { status: 201, headers: { Location: `/api/identity/verification-sessions/${session.id}` }, data: presentSession(session, caller, clock()), resource: resource(session) };
    },
    async listVerificationSessions({ caller, query }) {
      const request = pageRequest(query);
      const sessions = await identity.list(caller.userId, request);
      return { data: toListPage(sessions.map((s) => presentSession(s, caller, clock())), request.limit) };
    },
    async getVerificationSession({ caller, path }) {
      return { data: presentSession(await identity.get(caller, path.sessionId), caller, clock()) };
    },
    async submitVerificationSession({ trx, caller, path, body }) {
      const session = await identity.submit(trx, caller, path.sessionId, {
        idType: body.id_type,
        idNumber: body.id_number,
        firstName: body.first_name,
        lastName: body.last_name,
        dateOfBirth: body.date_of_birth,
        nationality: body.nationality,
      });
      return { data: presentSession(session, caller, clock()), resource: resource(session) };
    },
    async uploadVerificationDocument({ trx, caller, path, body, files }) {
      const file = files.find((f) => f.field === 'file');
      if (!file) throw new UnsupportedDocumentTypeError();
      const session = await identity.uploadDocument(trx, caller, path.sessionId, body.kind, file.bytes);
      return { data: presentSession(session, caller, clock()), resource: resource(session) };
    },
    async cancelVerificationSession({ trx, caller, path }) {
      const session = await identity.cancel(trx, caller, path.sessionId);
      return { data: presentSession(session, caller, clock()), resource: resource(session) };
    },
    async listAllVerificationSessions({ caller, query }) {
      const request = pageRequest(query);
      const sessions = await identity.adminList(caller, query.status, request);
      return { data: toListPage(sessions.map((s) => presentAdminSession(s, caller, clock())), request.limit) };
    },
    async approveVerificationSession({ trx, caller, path, body }) {
      const session = await identity.approve(trx, caller, path.sessionId, body?.note ?? null);
      return { data: presentAdminSession(session, caller, clock()), resource: resource(session) };
    },
    async rejectVerificationSession({ trx, caller, path, body }) {
      const session = await identity.reject(trx, caller, path.sessionId, { reasonCode: body.reason_code, note: body.note ?? null, kind: body.rejection ?? 'retry_allowed' });
      return { data: presentAdminSession(session, caller, clock()), resource: resource(session) };
    },
    async closeAccount({ trx, caller }) {
      const closed = await identity.closeAccount(trx, caller, endSessions);
      return {
        data: { id: closed.id, object: 'user', status: 'closed', closed_at: closed.closedAt.toISOString() },
        message: 'Account closed.',
        resource: { type: 'user', id: closed.id, status: 'closed', location: '' },
      };
    },
  };
}
