/**
 * A probe, not a benchmark (`make bench` does not run it): what does group commit buy in the
 * database alone? On a scratch database pgbench calls, in alternating runs (A B C, C B A...):
 *   A  transfer_create, one transfer per transaction, 32 clients (no group commit);
 *   B  transfer_create_batch with 8 transfers per call, 8 clients (64 transfers in flight);
 *   C  transfer_create_batch with 32 transfers per call, 4 clients.
 * Each prints transfers per second and PostgreSQL CPU per transfer.
 * Run: `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx scripts/bench/probes/transfer-batch.ts`
 * (PROBE_SECONDS per run, default 8; PROBE_PAIRS rounds, default 2; PROBE_PARTIES senders, default 2048:
 * with few wallets, concurrent batches wait on each other's locks).
 */
import { createScratchDatabase, fundedProbeParties, postgresCpuMs, runPgbenchScript, transferCreateScript } from '../bench-support';

const PARTIES = Number(process.env.PROBE_PARTIES ?? '2048');
const SECONDS = Number(process.env.PROBE_SECONDS ?? '8');
const PAIRS = Number(process.env.PROBE_PAIRS ?? '2');
const VARIANTS = [
  { name: 'A transfer_create x1, 32 clients', batch: 0, clients: 32 },
  { name: 'B transfer_create_batch x8, 8 clients', batch: 8, clients: 8 },
  { name: 'C transfer_create_batch x32, 4 clients', batch: 32, clients: 4 },
];

async function main(): Promise<void> {
  const db = await createScratchDatabase('probe_batch');
  try {
    await fundedProbeParties(db.knex, PARTIES);
    const results: Array<{ variant: string; transfers_per_s: number; postgres_cpu_ms_per_transfer: number }> = [];
    const order = Array.from({ length: PAIRS }, (_, round) => (round % 2 === 0 ? VARIANTS : [...VARIANTS].reverse())).flat();
    for (const variant of order) {
      const script = await transferCreateScript(db.knex, variant.batch);
      const cpuBefore = postgresCpuMs();
      const { tps, transactions } = runPgbenchScript(db.url, script.script, variant.clients, SECONDS);
      const transfers = transactions * Math.max(1, variant.batch);
      results.push({
        variant: variant.name,
        transfers_per_s: tps * Math.max(1, variant.batch),
        postgres_cpu_ms_per_transfer: Number(((postgresCpuMs() - cpuBefore) / Math.max(1, transfers)).toFixed(3)),
      });
      await script.remove();
    }
    process.stdout.write(`${JSON.stringify({ probe: 'transfer-batch', seconds_per_run: SECONDS, results }, null, 2)}\n`);
  } finally {
    await db.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
