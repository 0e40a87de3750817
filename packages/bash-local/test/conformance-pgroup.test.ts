import { defineBashExecutorConformance } from '@deepseek-ai/dsh-bash/conformance'
import { afterAll } from 'vitest'
import { countProcesses, localFactory, scratchDir, serverProcess } from './helpers.js'

const dir = scratchDir()
afterAll(() => dir.remove())

// Process group only: a process that leaves the group (setsid, a double fork into a new session) is
// not followed, so the suite does not define its escapee tests here; local.test.ts shows the limit itself.
defineBashExecutorConformance('local executor (pgroup)', {
  create: localFactory('pgroup'),
  countProcesses,
  workdir: dir.path,
  graceMs: 300,
  serverProcess: serverProcess('pgroup'),
  followsEscapees: false,
})
