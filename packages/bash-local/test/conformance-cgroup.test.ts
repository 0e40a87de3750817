import { defineBashExecutorConformance } from '@deepseek-ai/dsh-bash/conformance'
import { afterAll } from 'vitest'
import { cgroupAvailable, countProcesses, localFactory, scratchDir, serverProcess } from './helpers.js'

const dir = scratchDir()
afterAll(() => dir.remove())

// cgroup v2 per command: the kernel tracks every process, escapees included.
if (cgroupAvailable()) {
  defineBashExecutorConformance('local executor (cgroup)', {
    create: localFactory('cgroup'),
    countProcesses,
    workdir: dir.path,
    graceMs: 300,
    serverProcess: serverProcess('cgroup'),
  })
} else {
  // Without a writable cgroup v2 hierarchy the `auto` containment falls back to the marker (tested in its own file).
  defineBashExecutorConformance('local executor (auto, no cgroup on this machine)', {
    create: localFactory('auto'),
    countProcesses,
    workdir: dir.path,
    graceMs: 300,
    serverProcess: serverProcess('auto'),
  })
}
