import pino, { type DestinationStream, type Logger } from 'pino';
import pretty from 'pino-pretty';
import type { Config } from './config';

/** Keys whose values never reach a log line, whatever logs them. */
const REDACTED = ['*.password', '*.token', '*.access_token', '*.refresh_token'];

/**
 * The process logger: JSON lines (for log shippers) or, for a person at a terminal,
 * human-readable lines (pino-pretty): see `resolvedLogFormat`.
 */
export function createLogger(config: Pick<Config, 'logLevel' | 'logFormat' | 'nodeEnv'>, destination?: DestinationStream): Logger {
  const options = { level: config.logLevel, redact: REDACTED };
  if (resolvedLogFormat(config) === 'pretty') {
    const stream = pretty({ colorize: !destination && Boolean(process.stdout.isTTY), translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true, destination: destination ?? 1 });
    return pino(options, stream);
  }
  return destination ? pino(options, destination) : pino(options);
}

/**
 * The format of the process's log lines. Production always writes JSON (log shippers read it;
 * the configuration refuses LOG_FORMAT=pretty there). Elsewhere LOG_FORMAT decides, and `auto`
 * is readable lines in development when standard output is a terminal, JSON otherwise (a pipe,
 * a file, a test run).
 */
export function resolvedLogFormat(config: Pick<Config, 'logFormat' | 'nodeEnv'>, stdoutIsTty = Boolean(process.stdout.isTTY)): 'json' | 'pretty' {
  if (config.nodeEnv === 'production') return 'json';
  if (config.logFormat !== 'auto') return config.logFormat;
  return config.nodeEnv === 'development' && stdoutIsTty ? 'pretty' : 'json';
}
