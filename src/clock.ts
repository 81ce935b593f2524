/**
 * The time source of the services: `src/services.ts` gives every service the same one, and
 * tests inject their own (a fixed instant, or one moved ahead so recent entries count as
 * settled). Services read the time only through it; the database's `now()` stays the time of
 * rows written without an explicit date.
 */
export type Clock = () => Date;

/** The machine's clock. */
export const systemClock: Clock = () => new Date();

