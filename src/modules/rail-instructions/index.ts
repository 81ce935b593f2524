/** Public face of the rail instructions: import from here, not from the files inside. */
export { RAIL_INSTRUCTION_KINDS, retryAfterMs, type RailDeliverer, type RailInstruction, type RailInstructionKind } from './rail-instruction';
export { RailInstructionRepository } from './rail-instruction-repository';
export { RailInstructionService } from './rail-instruction-service';
export { railInstructionJobs } from './rail-instruction-jobs';
