import fs from 'node:fs';

/** Debian's chromium (never a downloaded browser); CHROMIUM_PATH points elsewhere. */
export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/** CI sets REQUIRE_BROWSER_TESTS=1: then a missing browser fails the run instead of skipping the journey. */
export const browserRequired = process.env.REQUIRE_BROWSER_TESTS === '1';

/** Whether the browser journey runs: a browser is installed, or it is required (and fails without one). */
export function browserJourneyRuns(): boolean {
  return browserRequired || fs.existsSync(CHROMIUM);
}

/** What `make test` says when the journey was skipped. */
export function browserSkippedNotice(files: string[]): string {
  return [
    `NOTE: the browser journey did NOT run (${files.join(', ')}): no Chromium at ${CHROMIUM}.`,
    '      Install Debian\'s browser (apt-get install -y chromium chromium-driver) and run `make test` again,',
    '      or point CHROMIUM_PATH at a Chromium; REQUIRE_BROWSER_TESTS=1 (set by CI) makes a missing browser a failure.',
  ].join('\n');
}
