import type { NotificationChannel, OutgoingMessage } from '../notifications';
import type { PartyIdentifier } from '../auth';

/** The address and channel of an identifier: SMS to a telephone number, e-mail to an address. */
export function destination(identifier: PartyIdentifier): { to: string; channel: NotificationChannel } {
  return identifier.kind === 'email' ? { to: identifier.email, channel: 'email' } : { to: identifier.phone, channel: 'sms' };
}

/** The texts this module sends (template name and body); a code is six digits, valid 10 minutes. */
export const messages = {
  signupCode: (identifier: PartyIdentifier, code: string): OutgoingMessage => ({
    ...destination(identifier),
    template: 'signup_code',
    body: `Your sign-up code is ${code}. It expires in 10 minutes. Never share it with anyone.`,
  }),
  /** No code: the identifier already has an account (the sign-up's answer is the same as for a new one). */
  signupExistingAccount: (identifier: PartyIdentifier): OutgoingMessage => ({
    ...destination(identifier),
    template: 'signup_existing_account',
    body: 'Someone asked to create an account with this address, which already has one. If it was you, log in or reset your password. No code was sent.',
  }),
  passwordResetCode: (identifier: PartyIdentifier, code: string): OutgoingMessage => ({
    ...destination(identifier),
    template: 'password_reset_code',
    body: `Your password reset code is ${code}. It expires in 10 minutes. If you did not ask for it, ignore this message.`,
  }),
  passwordChanged: (identifier: PartyIdentifier): OutgoingMessage => ({
    ...destination(identifier),
    template: 'password_changed',
    body: 'Your password was changed and your other sessions were signed out. If it was not you, reset your password now.',
  }),
};
