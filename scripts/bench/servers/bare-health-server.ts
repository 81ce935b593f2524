import express from 'express';

/** The baseline: a bare Express 5 handler answering the same JSON shape as GET /api/health. */
const app = express();
const startedAt = Date.now();
app.get('/api/health', (_req, res) => {
  res.json({
    success: true,
    data: {
      status: 'ok',
      version: '1.0.0',
      uptime_s: Math.floor((Date.now() - startedAt) / 1000),
      database: { status: 'up', latency_ms: 0.3 },
      cache: { status: 'up', kind: 'memory', latency_ms: 0 },
    },
  });
});
const server = app.listen(Number(process.env.PORT), () => process.stdout.write(`LISTENING ${process.env.PORT}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
