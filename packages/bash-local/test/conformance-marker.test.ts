import { defineBashExecutorConformance } from '@deepseek-ai/dsh-bash/conformance'
import { afterAll } from 'vitest'
import { countProcesses, localFactory, scratchDir, serverProcess } from './helpers.js'

const dir = scratchDir()
afterAll(() => dir.remove())

// Environment marker found through /proc: follows setsid/nohup/double-fork escapees that keep their
// environment (a process that clears its environment is missed; see the README).
defineBashExecutorConformance('local executor (marker)', {
  create: localFactory('marker'),
  countProcesses,
  workdir: dir.path,
  graceMs: 300,
  serverProcess: serverProcess('marker'),
})
