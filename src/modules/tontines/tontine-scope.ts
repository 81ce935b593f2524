import type { Knex } from 'knex';
import type { EventRepository } from '../events';
import type { TontineSituation } from './tontine-lifecycle';
import type { Tontine, TontineRepository } from './tontine-repository';

/** One transaction's view of a tontine: its repositories and the caller's situation. */
export interface TontineScope {
  trx: Knex.Transaction;
  repo: TontineRepository;
  events: EventRepository;
  tontine: Tontine;
  situation: TontineSituation;
}
