/**
 * The one lifecycle engine (floor 0: pure, imports nothing). A lifecycle is a table of
 * actions; each action names the statuses it may be taken `from`, the status it leads `to`
 * (or a function of the outcome, when only the work decides, e.g. a settlement that pays the
 * seller or not), who may take it (`by`), who may never take it even when also one of `by`
 * (`notBy`, e.g. nobody rules on their own case) and a `guard` on the rest of the state.
 *
 * It answers three questions, always the same way:
 * - `assertAllowed`: throws the error the area's contract names, checked in a fixed order:
 *   the action exists for this lifecycle, then who (`by`), then `notBy`, then the status
 *   (`from`), then the guard;
 * - `allowedActions`: the listed actions the caller may take now (the `allowed_actions` a
 *   response shows), in the order of `listed`;
 * - `next`: the status an action leads to, after checking it is allowed. Every status write
 *   of a service goes through it.
 *
 * An area turns a refusal into its own error with `refuse`, so responses keep their names,
 * statuses and messages.
 */

/** Why an action is refused, in the order the engine checks. */
export type Refusal<G extends string = string> =
  | { reason: 'unknown' }
  | { reason: 'party' }
  | { reason: 'conflict' }
  | { reason: 'state' }
  | { reason: 'guard'; guard: G };

export interface Transition<S extends string, P extends string, C, O, G extends string> {
  from: readonly S[];
  /** The status the action leads to, or how the outcome of its work decides it. */
  to: S | ((outcome: O) => S);
  /** Who may take it (omit when anybody who reached the object may). */
  by?: readonly P[];
  /** Who may never take it, even when also one of `by`. */
  notBy?: readonly P[];
  /** The rest of the state: the name of the refusal, or null when the action may go ahead. */
  guard?: (context: C) => G | null;
}

export interface LifecycleDefinition<S extends string, A extends string, P extends string, C extends { status: S }, O, G extends string> {
  /** The status a new object starts in. */
  initial: S;
  transitions: Readonly<Partial<Record<A, Transition<S, P, C, O, G>>>>;
  /** The actions `allowedActions` may answer, in their order (others exist but are never shown, e.g. the platform's own). */
  listed: readonly A[];
  /** Who the caller is to the object (needed when a transition has `by` or `notBy`). */
  partiesOf?: (context: C) => Iterable<P>;
  /** The area's error for a refusal; `allowed` gives the caller's allowed actions when the error names them. */
  refuse: (refusal: Refusal<G>, action: A, context: C, allowed: () => A[]) => Error;
}

export interface Lifecycle<S extends string, A extends string, C extends { status: S }, O, G extends string> {
  readonly initial: S;
  /** Why `action` is refused in `context`, or null when it is allowed. */
  refusal(action: A, context: C): Refusal<G> | null;
  /** Throws the area's error when `action` is not allowed in `context`. */
  assertAllowed(action: A, context: C): void;
  /** The listed actions allowed in `context`, in the listed order. */
  allowedActions(context: C): A[];
  /** The status `action` leads to from `context` (checked first); `outcome` for an outcome-decided action. */
  next(action: A, context: C, outcome?: O): S;
  /** The status `action` leads to for `outcome`, without checking (tables, tests). */
  target(action: A, outcome?: O): S;
}

export function defineLifecycle<S extends string, A extends string, P extends string, C extends { status: S }, O = never, G extends string = never>(
  definition: LifecycleDefinition<S, A, P, C, O, G>,
): Lifecycle<S, A, C, O, G> {
  const { transitions, listed, partiesOf, refuse } = definition;

  function refusal(action: A, context: C): Refusal<G> | null {
    const transition = transitions[action];
    if (!transition) return { reason: 'unknown' };
    if (transition.by || transition.notBy) {
      const parties = new Set<P>(partiesOf ? partiesOf(context) : []);
      if (transition.by && !transition.by.some((party) => parties.has(party))) return { reason: 'party' };
      if (transition.notBy?.some((party) => parties.has(party))) return { reason: 'conflict' };
    }
    if (!transition.from.includes(context.status)) return { reason: 'state' };
    const guard = transition.guard?.(context) ?? null;
    return guard === null ? null : { reason: 'guard', guard };
  }

  function allowedActions(context: C): A[] {
    return listed.filter((action) => refusal(action, context) === null);
  }

  function assertAllowed(action: A, context: C): void {
    const refused = refusal(action, context);
    if (refused) throw refuse(refused, action, context, () => allowedActions(context));
  }

  function target(action: A, outcome?: O): S {
    const transition = transitions[action];
    if (!transition) throw new Error(`lifecycle: no transition "${action}"`);
    if (typeof transition.to !== 'function') return transition.to;
    if (outcome === undefined) throw new Error(`lifecycle: "${action}" leads where its outcome decides; pass the outcome`);
    return transition.to(outcome);
  }

  return {
    initial: definition.initial,
    refusal,
    assertAllowed,
    allowedActions,
    next(action, context, outcome) {
      assertAllowed(action, context);
      return target(action, outcome);
    },
    target,
  };
}
