/** pg-boss 10's own statement texts (src/plans.js, no types of its own): the two a worker sends without awaiting (see src/jobs/jobs.ts). */
declare module 'pg-boss/src/plans' {
  export function completeJobs(schema: string): string;
  export function failJobsById(schema: string): string;
}
