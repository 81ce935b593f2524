/**
 * GET /api/health against a bare Express 5 handler returning the same JSON, measured in the
 * same run. Servers run in child processes pinned to core 0 (taskset), the load generator
 * here (run this script pinned to core 1: `make bench` does).
 * Target: our health route at least 0.8 of the bare handler's requests per second.
 */
import { runAutocannon, startServerProcess, printResult } from './bench-support';

async function main(): Promise<void> {
  const duration = Number(process.env.BENCH_DURATION_S ?? 10);
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
  const ours = await startServerProcess('scripts/bench/servers/api-server.ts');
  const bare = await startServerProcess('scripts/bench/servers/bare-health-server.ts');
  try {
    // Warm both up (JIT, pools), then measure one after the other on the same machine.
    await runAutocannon({ url: `${bare.url}/api/health`, duration: 2, connections });
    await runAutocannon({ url: `${ours.url}/api/health`, duration: 2, connections });
    const bareResult = await runAutocannon({ url: `${bare.url}/api/health`, duration, connections });
    const ourResult = await runAutocannon({ url: `${ours.url}/api/health`, duration, connections });
    printResult('health', {
      connections,
      duration_s: duration,
      bare: bareResult,
      ours: { ...ourResult, peak_rss_mb: await ours.peakRssMb() },
      ratio_rps: Number((ourResult.requests_per_s / bareResult.requests_per_s).toFixed(3)),
      target_ratio: 0.8,
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
