/**
 * A parent for the embedded-database process tests: starts the embedded PostgreSQL, prints
 * `READY <server pid> <url>` and waits to be killed.
 */
import { startEmbeddedPostgres } from '../../src/db/embedded-postgres';

startEmbeddedPostgres('memory://').then(
  (embedded) => {
    process.stdout.write(`READY ${embedded.pid} ${embedded.url}\n`);
    setInterval(() => undefined, 60_000);
  },
  (error: unknown) => {
    process.stderr.write(`${String(error)}\n`);
    process.exit(1);
  },
);
