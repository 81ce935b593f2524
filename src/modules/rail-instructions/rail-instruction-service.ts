import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Clock } from '../../clock';
import type { RailDeliverer, RailInstruction, RailInstructionKind } from './rail-instruction';
import { RailInstructionRepository } from './rail-instruction-repository';

export interface RailInstructionServiceDeps {
  knex: Knex;
  clock: Clock;
  logger?: Pick<Logger, 'warn'>;
}

/**
 * Delivers the instructions to the rails (see rail-instruction.ts). Each area registers the
 * deliverer of its kinds; the request that recorded an instruction tries it at once after its
 * commit (`deliverFirst`), and the job delivers every one still pending when its attempt is due
 * (`deliverDue`), backing off after each failure, until one succeeds.
 */
export class RailInstructionService {
  private readonly deliverers = new Map<RailInstructionKind, RailDeliverer>();

  constructor(private readonly deps: RailInstructionServiceDeps) {}

  /** The deliverer of `kind`: one per kind, registered by its area when it is built. */
  register(kind: RailInstructionKind, deliverer: RailDeliverer): void {
    if (this.deliverers.has(kind)) throw new Error(`a deliverer of ${kind} is registered already`);
    this.deliverers.set(kind, deliverer);
  }

  /** The request's own attempt, right after its commit: nothing when the job (or another request) attempted it already. */
  async deliverFirst(kind: RailInstructionKind, subjectId: string): Promise<boolean> {
    const claimed = await new RailInstructionRepository(this.deps.knex).claimFirst(kind, subjectId, this.deps.clock());
    return claimed ? this.attempt(claimed) : false;
  }

  /** The job: attempts up to `batchSize` instructions whose attempt is due; answers how many were delivered. */
  async deliverDue(options: { batchSize: number }): Promise<number> {
    let delivered = 0;
    for (const instruction of await new RailInstructionRepository(this.deps.knex).claimDue(this.deps.clock(), options.batchSize)) {
      if (await this.attempt(instruction)) delivered += 1;
    }
    return delivered;
  }

  private async attempt(instruction: RailInstruction): Promise<boolean> {
    const repository = new RailInstructionRepository(this.deps.knex);
    const deliverer = this.deliverers.get(instruction.kind);
    try {
      if (!deliverer) throw new Error(`no deliverer of ${instruction.kind} is registered`);
      await deliverer(instruction.subjectId);
      await repository.markDelivered(instruction.id, this.deps.clock());
      return true;
    } catch (error) {
      this.deps.logger?.warn({ err: error, railInstructionId: instruction.id, kind: instruction.kind, attempts: instruction.attempts }, 'a rail instruction could not be delivered; it is tried again later');
      await repository.noteFailure(instruction.id, error instanceof Error ? error.message : String(error));
      return false;
    }
  }
}
