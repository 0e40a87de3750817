import { defineBashExecutorConformance } from '@deepseek-ai/dsh-bash/conformance'
import { afterAll } from 'vitest'
import { countProcesses, localFactory, scratchDir } from './helpers.js'

const dir = scratchDir()
afterAll(() => dir.remove())

// Process group only: a process that leaves the group (setsid, a double fork into a new session) is
// not followed, so the escapee tests are skipped. This is the documented limit of the last fallback.
defineBashExecutorConformance('local executor (pgroup)', {
  create: localFactory('pgroup'),
  countProcesses,
  workdir: dir.path,
  graceMs: 300,
  followsEscapees: false,
})
