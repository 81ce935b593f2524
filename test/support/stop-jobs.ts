import { afterEach } from 'vitest';
import { stopTestJobs } from './jobs';

/**
 * A setup file, so the hook is registered in every test file. On the embedded back-end the files
 * share one module cache (isolate: false): a hook at the top of jobs.ts would be registered in
 * the first file that imports it only, and a later file's job instances (a periodic task polling
 * every second) would run on through the files after it, into their query counts.
 */
afterEach(stopTestJobs);
