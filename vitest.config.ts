import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    // The packages' suites, and the repository's own habits (import circles, public exports): test/.
    include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Real processes: keep the machine (2 cores) from being oversubscribed.
    maxWorkers: 2,
    // Fails the run when a process started by it outlives it (vitest.leaks.ts).
    globalSetup: ['./vitest.leaks.ts'],
    reporters: process.env.DSH_JSON_REPORT
      ? ['default', ['json', { outputFile: process.env.DSH_JSON_REPORT }]]
      : ['default'],
  },
})
