import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.mts';

// The mutation run (stryker.config.mjs): every test file in a fresh module graph, so mutants
// in code that runs at import (constants, patterns) are really loaded. On the embedded
// back-end that means a new pool per file on the one server (test/support/database.ts).
export default mergeConfig(base, defineConfig({ test: { isolate: true } }));
