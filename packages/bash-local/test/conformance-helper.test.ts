import { defineBashExecutorConformance } from '@deepseek-ai/dsh-bash/conformance'
import { afterAll } from 'vitest'
import { cgroupAvailable, countProcesses, createLocal, scratchDir, serverProcess } from './helpers.js'

const dir = scratchDir()
afterAll(() => dir.remove())

// The launcher helper (`launcher: 'helper'`): the commands are forked by a helper process, not by
// this event loop; every guarantee of the executor must hold the same.
const containment = cgroupAvailable() ? 'cgroup' : 'auto'
const server = serverProcess(containment)
defineBashExecutorConformance(`local executor (${containment}, launcher helper)`, {
  create: (config) => createLocal({ containment, launcher: 'helper', ...config }),
  countProcesses,
  workdir: dir.path,
  graceMs: 300,
  serverProcess: { ...server, config: { ...server.config, launcher: 'helper' } },
})
