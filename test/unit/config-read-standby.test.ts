import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config';

const PRIMARY = 'postgres://app@db1:5432/platform';

describe('the settings of reads that may lag', () => {
  it('leave every read on the primary by default', () => {
    expect(loadConfig({ NODE_ENV: 'development' }).databaseRead).toEqual({ url: undefined, afterWriteSeconds: 5, maxLagMs: 1_000, lagCheckIntervalMs: 1_000 });
    expect(loadConfig({ NODE_ENV: 'test', DATABASE_URL: PRIMARY }).databaseRead.url).toBeUndefined();
  });

  it('accept a standby of one host or several, with its bounds', () => {
    const config = loadConfig({
      NODE_ENV: 'test',
      DATABASE_URL: PRIMARY,
      DATABASE_READ_URL: 'postgres://app@db2:5432,db3:5432/platform?target_session_attrs=standby',
      DATABASE_READ_AFTER_WRITE_SECONDS: '10',
      DATABASE_READ_MAX_LAG_MS: '250',
      DATABASE_READ_LAG_CHECK_MS: '500',
    });
    expect(config.databaseRead).toEqual({ url: 'postgres://app@db2:5432,db3:5432/platform?target_session_attrs=standby', afterWriteSeconds: 10, maxLagMs: 250, lagCheckIntervalMs: 500 });
  });

  it('refuse a standby beside the embedded database, saying why', () => {
    expect(() => loadConfig({ NODE_ENV: 'development', DATABASE_READ_URL: 'postgres://app@db2/platform' })).toThrow(ConfigError);
    expect(() => loadConfig({ NODE_ENV: 'development', DATABASE_READ_URL: 'postgres://app@db2/platform' })).toThrow(/DATABASE_READ_URL needs DATABASE_URL: the embedded database has no standby/);
  });

  it('refuse a malformed standby URL or bound with the setting named', () => {
    const base = { NODE_ENV: 'test', DATABASE_URL: PRIMARY };
    expect(() => loadConfig({ ...base, DATABASE_READ_URL: 'mysql://db2/platform' })).toThrow(/DATABASE_READ_URL must use postgres: or postgresql:/);
    expect(() => loadConfig({ ...base, DATABASE_READ_URL: 'postgres://app:secret@db2:1,db3:99999/platform' })).toThrow(/^DATABASE_READ_URL: the port of "db3:99999"/);
    expect(() => loadConfig({ ...base, DATABASE_READ_URL: 'postgres://app:secret@db2:1,db3:99999/platform' })).not.toThrow(/secret/);
    expect(() => loadConfig({ ...base, DATABASE_READ_MAX_LAG_MS: '-1' })).toThrow(/DATABASE_READ_MAX_LAG_MS must be between 0 and 10000/);
    expect(() => loadConfig({ ...base, DATABASE_READ_AFTER_WRITE_SECONDS: 'soon' })).toThrow(/DATABASE_READ_AFTER_WRITE_SECONDS must be an integer/);
    expect(() => loadConfig({ ...base, DATABASE_READ_LAG_CHECK_MS: '10' })).toThrow(/DATABASE_READ_LAG_CHECK_MS must be between 100 and 5000/);
  });

  it('refuse a lag bound and check period that could leave a statement line behind', () => {
    const base = { NODE_ENV: 'test', DATABASE_URL: PRIMARY, DATABASE_READ_URL: 'postgres://app@db2/platform' };
    expect(loadConfig({ ...base, DATABASE_READ_MAX_LAG_MS: '9000', DATABASE_READ_LAG_CHECK_MS: '1000' }).databaseRead.maxLagMs).toBe(9_000);
    expect(() => loadConfig({ ...base, DATABASE_READ_MAX_LAG_MS: '9001', DATABASE_READ_LAG_CHECK_MS: '1000' })).toThrow(/DATABASE_READ_MAX_LAG_MS \+ DATABASE_READ_LAG_CHECK_MS must be at most 10000: account statements end 15 s before now/);
  });
});
