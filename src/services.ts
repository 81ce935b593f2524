import type { Redis } from 'ioredis';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Config } from './config';
import { loadOpenApiDocument } from './http/openapi-document';
import { HealthService } from './modules/health/health-service';
import { SessionService } from './modules/auth/session-service';
import { TokenService } from './modules/auth/token-service';

export interface ServiceDeps {
  config: Config;
  knex: Knex;
  logger: Logger;
  redis?: Redis;
}

/** The composition of every service; one place to see what depends on what. */
export function buildServices(deps: ServiceDeps) {
  const { config, knex, redis } = deps;
  const tokens = new TokenService(config.jwt);
  return {
    health: new HealthService(knex, redis, loadOpenApiDocument().version),
    tokens,
    sessions: new SessionService(knex, tokens),
    /** Stops background work (timers, workers) before the pool closes. */
    shutdown(): void {},
  };
}

export type Services = ReturnType<typeof buildServices>;
