import { afterAll } from 'vitest';
import { dropTestDatabase } from './database';

// Registered before the file's own hooks, so it runs after them (afterAll hooks run in
// reverse order): the file's database outlives everything the file closes at its end.
afterAll(dropTestDatabase);
