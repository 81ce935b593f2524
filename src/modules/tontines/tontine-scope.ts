import type { Knex } from 'knex';
import type { NewEvent } from '../events';
import type { TontineSituation } from './tontine-lifecycle';
import type { Tontine, TontineRepository } from './tontine-repository';
import type { TontineState } from './tontine-state';

/** One transaction's view of a tontine: its repositories and the caller's situation. */
export interface TontineScope {
  trx: Knex.Transaction;
  repo: TontineRepository;
  /**
   * Where the change records its events. In an action they are written once the change is done,
   * each carrying the tontine as it then stands (`data.object`), so no snapshot reads it again.
   */
  events: { record(event: NewEvent): Promise<unknown> };
  tontine: Tontine;
  situation: TontineSituation;
  /** The tontine's members, cycles and contributions, read with the situation under the lock. */
  state: TontineState;
}
