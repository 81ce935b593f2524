import pino, { type DestinationStream, type Logger } from 'pino';
import pretty from 'pino-pretty';
import type { Config } from './config';

/** Keys whose values never reach a log line, whatever logs them. */
const REDACTED = ['*.password', '*.token', '*.access_token', '*.refresh_token'];

/**
 * The process logger: JSON lines (for log shippers) or, for a person at a terminal,
 * human-readable lines (pino-pretty). LOG_FORMAT chooses; `auto` is pretty in development
 * when standard output is a terminal, JSON otherwise.
 */
export function createLogger(config: Pick<Config, 'logLevel' | 'logFormat' | 'nodeEnv'>, destination?: DestinationStream): Logger {
  const options = { level: config.logLevel, redact: REDACTED };
  if (resolvedLogFormat(config) === 'pretty') {
    const stream = pretty({ colorize: !destination && Boolean(process.stdout.isTTY), translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true, destination: destination ?? 1 });
    return pino(options, stream);
  }
  return destination ? pino(options, destination) : pino(options);
}

export function resolvedLogFormat(config: Pick<Config, 'logFormat' | 'nodeEnv'>, stdoutIsTty = Boolean(process.stdout.isTTY)): 'json' | 'pretty' {
  if (config.logFormat !== 'auto') return config.logFormat;
  return config.nodeEnv === 'development' && stdoutIsTty ? 'pretty' : 'json';
}
