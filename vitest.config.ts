import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Real processes: keep the machine (2 cores) from being oversubscribed.
    maxWorkers: 2,
    reporters: process.env.DSH_JSON_REPORT
      ? ['default', ['json', { outputFile: process.env.DSH_JSON_REPORT }]]
      : ['default'],
  },
})
