import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config';
import { PRODUCTION_ENV } from '../support/production-env';
import { resolvedLogFormat } from '../../src/logger';

/**
 * The format of the process's log lines, as a pure function of the configuration and of
 * whether standard output is a terminal: readable lines for a person in development at a
 * terminal, JSON for machines everywhere else, and JSON always in production.
 */
describe('the log format', () => {
  const table: [LogFormatCase, 'json' | 'pretty'][] = [
    [{ logFormat: 'auto', nodeEnv: 'development', tty: true }, 'pretty'],
    [{ logFormat: 'auto', nodeEnv: 'development', tty: false }, 'json'],
    [{ logFormat: 'auto', nodeEnv: 'test', tty: true }, 'json'],
    [{ logFormat: 'auto', nodeEnv: 'production', tty: true }, 'json'],
    [{ logFormat: 'auto', nodeEnv: 'production', tty: false }, 'json'],
    [{ logFormat: 'pretty', nodeEnv: 'development', tty: false }, 'pretty'],
    [{ logFormat: 'pretty', nodeEnv: 'test', tty: false }, 'pretty'],
    [{ logFormat: 'pretty', nodeEnv: 'production', tty: true }, 'json'],
    [{ logFormat: 'json', nodeEnv: 'development', tty: true }, 'json'],
    [{ logFormat: 'json', nodeEnv: 'production', tty: true }, 'json'],
  ];
  it.each(table)('%o logs %s', (input, expected) => {
    expect(resolvedLogFormat({ logFormat: input.logFormat, nodeEnv: input.nodeEnv }, input.tty)).toBe(expected);
  });

  it('the configuration refuses LOG_FORMAT=pretty in production and accepts it elsewhere', () => {
    const production = PRODUCTION_ENV;
    expect(loadConfig({ ...production, LOG_FORMAT: 'json' }).logFormat).toBe('json');
    expect(() => loadConfig({ ...production, LOG_FORMAT: 'pretty' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...production, LOG_FORMAT: 'pretty' })).toThrow(/LOG_FORMAT=pretty is refused in production/);
    expect(loadConfig({ NODE_ENV: 'development', LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
    expect(loadConfig({ NODE_ENV: 'development' }).logFormat).toBe('auto');
  });
});

interface LogFormatCase {
  logFormat: 'auto' | 'json' | 'pretty';
  nodeEnv: 'development' | 'test' | 'production';
  tty: boolean;
}
