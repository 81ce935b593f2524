import { describe, expect, it } from 'vitest';
import { allowedActions, assertAllowed, cycleDueAt, statusAfter, type TontineSituation } from '../../src/modules/tontines';

const forming: TontineSituation = { status: 'forming', role: 'organizer', memberCount: 3, maxMembers: 5, currentCycle: 0, paidCurrentCycle: false, payoutMade: false };

function codeOf(situation: TontineSituation, action: Parameters<typeof assertAllowed>[1]): string {
  try {
    assertAllowed(situation, action);
    return 'ok';
  } catch (error) {
    return (error as { code: string }).code;
  }
}

describe('tontine lifecycle', () => {
  it('answers a refused caller with the error of its own case', () => {
    // The organizer's actions refused to an invited user or an administrator: 403, not 404.
    expect(codeOf({ ...forming, role: 'invited' }, 'start')).toBe('NotTontineOrganizer');
    expect(codeOf({ ...forming, role: 'invited' }, 'cancel')).toBe('NotTontineOrganizer');
    // Leave: 422 OrganizerCannotLeave only for the organizer; an administrator is no member (403).
    expect(codeOf(forming, 'leave')).toBe('OrganizerCannotLeave');
    expect(codeOf({ ...forming, role: 'administrator' }, 'leave')).toBe('NotTontineOrganizer');
    // Leave and contribute for someone who is not a member: 404, as the tontine is not theirs.
    expect(codeOf({ ...forming, role: 'invited' }, 'leave')).toBe('TontineNotFound');
  });

  it('names what each role may do in each status', () => {
    expect(allowedActions(forming)).toEqual(['invite', 'start', 'cancel']);
    expect(allowedActions({ ...forming, role: 'member' })).toEqual(['leave']);
    expect(allowedActions({ ...forming, role: 'invited' })).toEqual(['join']);
    expect(allowedActions({ ...forming, memberCount: 5 })).toEqual(['start', 'cancel']);
    expect(allowedActions({ ...forming, role: 'invited', memberCount: 5 })).toEqual([]);
    expect(allowedActions({ ...forming, memberCount: 1 })).toEqual(['invite', 'cancel']);
    const active: TontineSituation = { ...forming, status: 'active', currentCycle: 2 };
    expect(allowedActions(active)).toEqual(['contribute', 'cancel']);
    expect(allowedActions({ ...active, paidCurrentCycle: true })).toEqual(['cancel']);
    expect(allowedActions({ ...active, role: 'member' })).toEqual(['contribute']);
    for (const status of ['completed', 'canceled'] as const) {
      expect(allowedActions({ ...active, status })).toEqual([]);
      expect(allowedActions({ ...active, status, role: 'member' })).toEqual([]);
    }
  });

  it('refuses with the contract error: identity first, then status, then the action condition', () => {
    const active: TontineSituation = { ...forming, status: 'active', currentCycle: 2 };
    expect(codeOf({ ...active, role: 'member' }, 'start')).toBe('NotTontineOrganizer');
    expect(codeOf(active, 'start')).toBe('InvalidTontineState');
    expect(codeOf(active, 'join')).toBe('AlreadyMember');
    expect(codeOf({ ...active, role: 'invited' }, 'contribute')).toBe('TontineNotFound');
    expect(codeOf({ ...forming, role: 'organizer' }, 'leave')).toBe('OrganizerCannotLeave');
    expect(codeOf({ ...forming, memberCount: 1 }, 'start')).toBe('NotEnoughMembers');
    expect(codeOf({ ...forming, role: 'invited', memberCount: 5 }, 'join')).toBe('TontineFull');
    expect(codeOf({ ...active, paidCurrentCycle: true }, 'contribute')).toBe('ContributionAlreadyPaid');
    expect(codeOf({ ...active, status: 'completed' }, 'cancel')).toBe('InvalidTontineState');
    expect(codeOf(active, 'cancel')).toBe('ok');
  });

  it('a non-member (invited, or one who left) cannot leave or contribute: 404 TontineNotFound, not 403', () => {
    const active: TontineSituation = { ...forming, status: 'active', currentCycle: 2 };
    expect(codeOf({ ...forming, role: 'invited' }, 'leave')).toBe('TontineNotFound');
    expect(codeOf({ ...forming, role: 'former_member' }, 'leave')).toBe('TontineNotFound');
    expect(codeOf({ ...active, role: 'invited' }, 'contribute')).toBe('TontineNotFound');
    expect(codeOf({ ...active, role: 'former_member' }, 'contribute')).toBe('TontineNotFound');
    expect(codeOf({ ...forming, role: 'member' }, 'leave')).toBe('ok');
  });

  it('once a pot is paid out, nobody can cancel, and a member who received a pot still owes contributions', () => {
    const afterPayout: TontineSituation = { ...forming, status: 'active', currentCycle: 2, payoutMade: true };
    expect(codeOf(afterPayout, 'cancel')).toBe('InvalidTontineState');
    expect(allowedActions(afterPayout)).toEqual(['contribute']);
    expect(allowedActions({ ...afterPayout, paidCurrentCycle: true })).toEqual([]);
    expect(allowedActions({ ...afterPayout, role: 'member' })).toEqual(['contribute']);
    expect(codeOf({ ...afterPayout, currentCycle: 1, payoutMade: false }, 'cancel')).toBe('ok');
    try {
      assertAllowed(afterPayout, 'cancel');
    } catch (error) {
      expect((error as Error).message).toBe('A pot has already been paid out: no member can end this tontine any more (only a platform administrator can dissolve it).');
      expect((error as { details: unknown }).details).toEqual({ status: 'active', action: 'cancel', allowed_actions: ['contribute'] });
    }
  });

  it('a contribution pays the cycle it names: the open one, else ContributionAlreadyPaid (paid) or CycleNotOpen', () => {
    const active: TontineSituation = { ...forming, status: 'active', currentCycle: 2, payoutMade: true };
    expect(codeOf({ ...active, requestedCycle: 2, paidRequestedCycle: false }, 'contribute')).toBe('ok');
    expect(codeOf({ ...active, paidCurrentCycle: true, requestedCycle: 2, paidRequestedCycle: true }, 'contribute')).toBe('ContributionAlreadyPaid');
    expect(codeOf({ ...active, requestedCycle: 1, paidRequestedCycle: true }, 'contribute')).toBe('ContributionAlreadyPaid');
    expect(codeOf({ ...active, requestedCycle: 3, paidRequestedCycle: false }, 'contribute')).toBe('CycleNotOpen');
    expect(codeOf({ ...active, paidCurrentCycle: true, requestedCycle: 3, paidRequestedCycle: false }, 'contribute')).toBe('CycleNotOpen');
    expect(codeOf({ ...active, status: 'completed', requestedCycle: 3 }, 'contribute')).toBe('InvalidTontineState');
    try {
      assertAllowed({ ...active, requestedCycle: 3, paidRequestedCycle: false }, 'contribute');
    } catch (error) {
      expect((error as { details: unknown }).details).toEqual({ cycle: 3, open_cycle: 2 });
      expect((error as Error).message).toBe('Cycle 3 is not open: the open cycle is 2.');
    }
  });

  it('starts with two members, not fewer', () => {
    expect(codeOf({ ...forming, memberCount: 2 }, 'start')).toBe('ok');
    expect(codeOf({ ...forming, memberCount: 1 }, 'start')).toBe('NotEnoughMembers');
    expect(allowedActions({ ...forming, memberCount: 2 })).toEqual(['invite', 'start', 'cancel']);
  });

  it('every status a tontine action writes comes from the lifecycle', () => {
    const active: TontineSituation = { ...forming, status: 'active', currentCycle: 2 };
    expect(statusAfter(forming, 'start')).toBe('active');
    expect(statusAfter(forming, 'cancel')).toBe('canceled');
    expect(statusAfter({ ...active, role: 'member' }, 'contribute', { completesTontine: false })).toBe('active');
    expect(statusAfter({ ...active, role: 'member' }, 'contribute', { completesTontine: true })).toBe('completed');
    expect(() => statusAfter({ ...forming, memberCount: 1 }, 'start')).toThrow(expect.objectContaining({ code: 'NotEnoughMembers' }));
  });

  it('only a platform administrator dissolves, a forming or active tontine, and it is never an allowed action', () => {
    const administrator: TontineSituation = { ...forming, role: 'administrator', status: 'active', payoutMade: true };
    expect(statusAfter(administrator, 'dissolve')).toBe('canceled');
    expect(statusAfter({ ...administrator, status: 'forming' }, 'dissolve')).toBe('canceled');
    expect(allowedActions(administrator)).toEqual([]);
    for (const status of ['completed', 'canceled'] as const) {
      try {
        assertAllowed({ ...administrator, status }, 'dissolve');
        expect.unreachable();
      } catch (error) {
        expect((error as { code: string }).code).toBe('InvalidTontineState');
        expect((error as { details: unknown }).details).toEqual({ status, action: 'dissolve', allowed_actions: [] });
      }
    }
    expect(codeOf(forming, 'dissolve')).toBe('NotTontineOrganizer');
  });

  it('schedules cycle k k periods after the start; a month keeps the day, or the last day of a shorter month', () => {
    const start = new Date('2027-01-31T08:30:00.000Z');
    expect(cycleDueAt(start, 'weekly', 1).toISOString()).toBe('2027-02-07T08:30:00.000Z');
    expect(cycleDueAt(start, 'biweekly', 2).toISOString()).toBe('2027-02-28T08:30:00.000Z');
    expect(cycleDueAt(start, 'monthly', 1).toISOString()).toBe('2027-02-28T08:30:00.000Z');
    expect(cycleDueAt(start, 'monthly', 2).toISOString()).toBe('2027-03-31T08:30:00.000Z');
    expect(cycleDueAt(start, 'monthly', 3).toISOString()).toBe('2027-04-30T08:30:00.000Z');
    expect(cycleDueAt(start, 'monthly', 12).toISOString()).toBe('2028-01-31T08:30:00.000Z');
    expect(cycleDueAt(new Date('2027-11-29T00:00:00.000Z'), 'monthly', 3).toISOString()).toBe('2028-02-29T00:00:00.000Z');
  });
});
