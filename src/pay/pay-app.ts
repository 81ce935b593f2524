import express, { type Express } from 'express';
import helmet from 'helmet';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Config } from '../config';
import type { Services } from '../services';

export interface PayAppDeps {
  config: Config;
  knex: Knex;
  logger: Logger;
  services: Services;
}

/** The public customer payment page, served on PAY_PORT and addressed as PAY_URL. */
export function createPayApp(_deps: PayAppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(helmet());
  app.use((_req, res) => {
    res.status(404).type('html').send('<!doctype html><title>Not found</title><h1>Page not found</h1>');
  });
  return app;
}
