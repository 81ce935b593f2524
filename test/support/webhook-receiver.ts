import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A real HTTP receiver on loopback: answers from a script (then 200), records every request. */
export class Receiver {
  readonly requests: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  readonly script: { status: number; delayMs?: number; headers?: Record<string, string> }[] = [];
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      this.requests.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const step = this.script.shift() ?? { status: 200 };
      const answer = () => {
        if (!res.destroyed) res.writeHead(step.status, step.headers ?? {}).end('ok');
      };
      if (step.delayMs) setTimeout(answer, step.delayMs).unref();
      else answer();
    });
  });
  url = '';

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
    return this;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
