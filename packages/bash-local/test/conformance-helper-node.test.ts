import { defineBashExecutorConformance } from '@deepseek-ai/dsh-bash/conformance'
import { afterAll } from 'vitest'
import { cgroupAvailable, countProcesses, createLocal, scratchDir, serverProcess } from './helpers.js'

const dir = scratchDir()
afterAll(() => dir.remove())

// The default `helper` is the native helper where the package ships one (the other conformance
// files run with it): here the same suite with the Node helper, used where none ships.
const containment = cgroupAvailable() ? 'cgroup' : 'auto'
const server = serverProcess(containment)
defineBashExecutorConformance(`local executor (${containment}, launcher helper-node)`, {
  create: (config) => createLocal({ containment, launcher: 'helper-node', ...config }),
  countProcesses,
  workdir: dir.path,
  graceMs: 300,
  serverProcess: { ...server, config: { ...server.config, launcher: 'helper-node' } },
})
