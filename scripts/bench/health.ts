/**
 * GET /api/health against a bare Express 5 handler returning the same JSON, measured in the
 * same run. Servers run in child processes pinned to core 0 (taskset), the load generator
 * here (run this script pinned to core 1: `make bench` does).
 * Target: our health route at least 0.85 of the bare handler's requests per second.
 * Each side's CPU per request (from /proc) is reported too: on a busy machine it moves far
 * less than throughput, and its ratio says what the route costs beyond a bare handler.
 */
import { runAutocannon, startServerProcess, printResult, type LoadResult } from './bench-support';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

/** The round with the median requests per second. */
function median(rounds: LoadResult[]): LoadResult {
  return [...rounds].sort((a, b) => a.requests_per_s - b.requests_per_s)[Math.floor(rounds.length / 2)] as LoadResult;
}

async function main(): Promise<void> {
  const duration = Number(process.env.BENCH_DURATION_S ?? 5);
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
  const ours = await startServerProcess('scripts/bench/servers/api-server.ts');
  const bare = await startServerProcess('scripts/bench/servers/bare-health-server.ts');
  try {
    // Warm both up (JIT, pools), then alternate short rounds so that drift in the machine's
    // load hits both sides alike; the medians are compared.
    await runAutocannon({ url: `${bare.url}/api/health`, duration: 2, connections });
    await runAutocannon({ url: `${ours.url}/api/health`, duration: 2, connections });
    const bareRounds: LoadResult[] = [];
    const ourRounds: LoadResult[] = [];
    const cpu = { bare: { ms: 0, requests: 0 }, ours: { ms: 0, requests: 0 } };
    const measured = async (side: 'bare' | 'ours', server: typeof ours): Promise<LoadResult> => {
      const before = await server.cpuMs();
      const result = await runAutocannon({ url: `${server.url}/api/health`, duration, connections });
      cpu[side].ms += (await server.cpuMs()) - before;
      cpu[side].requests += result.total;
      return result;
    };
    for (let round = 0; round < ROUNDS; round += 1) {
      bareRounds.push(await measured('bare', bare));
      ourRounds.push(await measured('ours', ours));
    }
    const cpuPerRequest = (side: 'bare' | 'ours') => Number((cpu[side].ms / Math.max(1, cpu[side].requests)).toFixed(4));
    const bareResult = median(bareRounds);
    const ourResult = median(ourRounds);
    printResult('health', {
      connections,
      rounds: ROUNDS,
      round_duration_s: duration,
      bare: bareResult,
      ours: { ...ourResult, peak_rss_mb: await ours.peakRssMb() },
      ratio_rps: Number((ourResult.requests_per_s / bareResult.requests_per_s).toFixed(3)),
      cpu_ms_per_request: { bare: cpuPerRequest('bare'), ours: cpuPerRequest('ours') },
      cpu_ratio_bare_over_ours: Number((cpuPerRequest('bare') / Math.max(1e-9, cpuPerRequest('ours'))).toFixed(3)),
      ratio_rps_per_round: ourRounds.map((r, i) => Number((r.requests_per_s / (bareRounds[i] as LoadResult).requests_per_s).toFixed(3))),
      target_ratio: 0.85,
      targets: [
        {
          benchmark: 'health',
          measured: `${Number((ourResult.requests_per_s / bareResult.requests_per_s).toFixed(3))}x a bare HTTP server`,
          target: '>= 0.85x a bare HTTP server',
          met: ourResult.requests_per_s / bareResult.requests_per_s >= 0.85,
        },
      ],
    });
  } finally {
    await ours.stop();
    await bare.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
