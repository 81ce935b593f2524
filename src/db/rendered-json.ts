/**
 * A value the database already rendered as JSON text, in the contract's shape `T` (the
 * invoices list: parsing its rows and serialising them again would be most of its API CPU). A
 * handler answers it as its `data`; the pipeline splices the text into the envelope as is
 * (and, where responses are validated, parses it first so the contract check sees it).
 * `T` is only a type: what the text holds is the producer's promise, which its test keeps
 * (the SQL against the TypeScript presenter, byte for byte).
 */
export class RenderedJson<T> {
  /** Never set: carries `T`, so a rendering of one shape is not taken for another. */
  declare readonly shape?: T;

  constructor(readonly text: string) {}
}
