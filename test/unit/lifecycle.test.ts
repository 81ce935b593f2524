import { describe, expect, it } from 'vitest';
import { defineLifecycle, type Refusal } from '../../src/domain/lifecycle';

/** A door: a small lifecycle that uses every feature of the engine once. */
type Status = 'closed' | 'open' | 'locked' | 'broken';
type Action = 'open' | 'close' | 'lock' | 'unlock' | 'kick' | 'inspect';
type Party = 'owner' | 'guest' | 'thief';
interface Door {
  status: Status;
  parties: Party[];
  hasKey: boolean;
}

class Refused extends Error {
  constructor(readonly refusal: Refusal<'no_key'>, readonly action: Action, readonly allowed: Action[]) {
    super(`${action}: ${refusal.reason}`);
  }
}

const door = defineLifecycle<Status, Action, Party, Door, { hinges: boolean }, 'no_key'>({
  initial: 'closed',
  transitions: {
    open: { from: ['closed'], to: 'open' },
    close: { from: ['open'], to: 'closed', by: ['owner', 'guest'] },
    lock: { from: ['closed'], to: 'locked', by: ['owner'], guard: (d) => (d.hasKey ? null : 'no_key') },
    unlock: { from: ['locked'], to: 'closed', by: ['owner', 'guest'], notBy: ['thief'] },
    kick: { from: ['closed', 'locked'], to: ({ hinges }) => (hinges ? 'open' : 'broken'), by: ['thief'] },
  },
  listed: ['open', 'close', 'lock', 'unlock', 'inspect'],
  partiesOf: (d) => d.parties,
  refuse: (refusal, action, _d, allowed) => new Refused(refusal, action, allowed()),
});

const at = (status: Status, parties: Party[] = ['owner'], hasKey = true): Door => ({ status, parties, hasKey });

function refusalOf(action: Action, d: Door): Refused | undefined {
  try {
    door.assertAllowed(action, d);
    return undefined;
  } catch (error) {
    return error as Refused;
  }
}

describe('the lifecycle engine', () => {
  it('starts new objects in its initial status', () => {
    expect(door.initial).toBe('closed');
  });

  it('leads each allowed action to its `to` status', () => {
    expect(door.next('open', at('closed'))).toBe('open');
    expect(door.next('close', at('open'))).toBe('closed');
    expect(door.next('lock', at('closed'))).toBe('locked');
    expect(door.next('unlock', at('locked', ['guest']))).toBe('closed');
  });

  it('lets the outcome decide where an outcome-decided action leads, and demands the outcome', () => {
    expect(door.next('kick', at('locked', ['thief']), { hinges: true })).toBe('open');
    expect(door.next('kick', at('locked', ['thief']), { hinges: false })).toBe('broken');
    expect(() => door.next('kick', at('locked', ['thief']))).toThrow(/outcome/);
    expect(door.target('kick', { hinges: false })).toBe('broken');
    expect(door.target('open')).toBe('open');
  });

  it('refuses an action the table does not have as `unknown`, before anything else', () => {
    expect(refusalOf('inspect', at('closed', []))?.refusal).toEqual({ reason: 'unknown' });
    expect(() => door.target('inspect')).toThrow(/no transition/);
  });

  it('refuses a caller who is none of `by` as `party`, before looking at the status', () => {
    expect(refusalOf('lock', at('open', ['guest']))?.refusal).toEqual({ reason: 'party' });
    expect(refusalOf('kick', at('closed', ['owner', 'guest']))?.refusal).toEqual({ reason: 'party' });
  });

  it('refuses a caller who is also one of `notBy` as `conflict`, even when one of `by`', () => {
    expect(refusalOf('unlock', at('locked', ['guest', 'thief']))?.refusal).toEqual({ reason: 'conflict' });
    expect(refusalOf('unlock', at('closed', ['guest', 'thief']))?.refusal).toEqual({ reason: 'conflict' });
  });

  it('refuses a caller who is any one of several `notBy` parties as `conflict`', () => {
    const gate = defineLifecycle<'shut' | 'ajar', 'pass', 'owner' | 'guest' | 'thief', { status: 'shut' | 'ajar'; parties: Array<'owner' | 'guest' | 'thief'> }>({
      initial: 'shut',
      transitions: { pass: { from: ['shut'], to: 'ajar', notBy: ['guest', 'thief'] } },
      listed: ['pass'],
      partiesOf: (g) => g.parties,
      refuse: (refusal) => new Error(refusal.reason),
    });
    expect(() => gate.assertAllowed('pass', { status: 'shut', parties: ['owner', 'guest'] })).toThrow('conflict');
    expect(gate.allowedActions({ status: 'shut', parties: ['owner'] })).toEqual(['pass']);
  });

  it('refuses a status outside `from` as `state`, before the guard', () => {
    expect(refusalOf('lock', at('open', ['owner'], false))?.refusal).toEqual({ reason: 'state' });
    expect(refusalOf('open', at('broken'))?.refusal).toEqual({ reason: 'state' });
  });

  it('refuses with the guard’s own reason when the rest of the state forbids it', () => {
    expect(refusalOf('lock', at('closed', ['owner'], false))?.refusal).toEqual({ reason: 'guard', guard: 'no_key' });
    expect(() => door.next('lock', at('closed', ['owner'], false))).toThrow(Refused);
  });

  it('lists the allowed actions among `listed` only, in the listed order', () => {
    expect(door.allowedActions(at('closed'))).toEqual(['open', 'lock']);
    expect(door.allowedActions(at('closed', ['owner'], false))).toEqual(['open']);
    expect(door.allowedActions(at('locked', ['guest']))).toEqual(['unlock']);
    // `kick` is allowed for a thief but is not listed: never shown.
    expect(door.allowedActions(at('locked', ['thief']))).toEqual([]);
    expect(door.refusal('kick', at('locked', ['thief']))).toBeNull();
  });

  it('hands the area’s error the caller’s allowed actions', () => {
    const refused = refusalOf('close', at('closed', ['owner']));
    expect(refused).toBeInstanceOf(Refused);
    expect(refused?.allowed).toEqual(['open', 'lock']);
  });
});
