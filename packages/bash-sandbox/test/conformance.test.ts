import { defineBashExecutorConformance } from '@deepseek-ai/dsh-bash/conformance'
import { afterAll, describe, it } from 'vitest'
import { countProcesses, sandboxFactory, sandboxUnavailable, scratchDir, serverProcess } from './helpers.js'

const dir = scratchDir()
afterAll(() => dir.remove())

const reason = sandboxUnavailable()
if (reason) {
  describe('bash executor conformance: sandbox executor', () => {
    it.skip(`needs bwrap: ${reason}`, () => {})
  })
} else {
  // The workspace (and the suite's workdir, under /tmp) bound writable; everything else read-only.
  defineBashExecutorConformance('sandbox executor (workspace-write)', {
    create: sandboxFactory({ mode: 'workspace-write', workspaceRoot: dir.path }),
    countProcesses,
    workdir: dir.path,
    graceMs: 300,
    serverProcess: serverProcess({ mode: 'workspace-write', workspaceRoot: dir.path }),
  })
  // The suite writes nothing into its workdir, so it passes read-only too (the workdir is still visible).
  defineBashExecutorConformance('sandbox executor (read-only, marker containment)', {
    create: sandboxFactory({ mode: 'read-only', workspaceRoot: dir.path, containment: 'marker' }),
    countProcesses,
    workdir: dir.path,
    graceMs: 300,
    serverProcess: serverProcess({ mode: 'read-only', workspaceRoot: dir.path, containment: 'marker' }),
  })
  // Egress by domain: the bridge is the sandbox's first process and runs the command (netbridge.c);
  // exits, signals, leftovers, timeouts and kills must be exactly as without it.
  const proxy = { allow: ['example.test'] }
  defineBashExecutorConformance('sandbox executor (workspace-write, egress by domain)', {
    create: sandboxFactory({ mode: 'workspace-write', workspaceRoot: dir.path, network: proxy }),
    countProcesses,
    workdir: dir.path,
    graceMs: 300,
    serverProcess: serverProcess({ mode: 'workspace-write', workspaceRoot: dir.path, network: proxy }),
  })
}
