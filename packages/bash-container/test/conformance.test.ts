import { mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { defineBashExecutorConformance, loadExecutorPlugin } from '@deepseek-ai/dsh-bash/conformance'
import { afterAll, describe, expect, vi } from 'vitest'
import { ContainerExecutor } from '../src/index.js'
import { containersWithLabel, ENGINE_URL, processesWith, TEST_IMAGE, unavailableReason } from './docker.js'

const skip = unavailableReason()
if (skip) console.warn(`[dsh-bash-container] skipping the container conformance suite: ${skip}`)

describe.skipIf(skip !== undefined)('container executor against a real engine', () => {
  const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-container-conf-')))
  const label = `dsh-bash.test=conformance-${process.pid}`
  afterAll(async () => {
    // Every executor was disposed: none of its containers is left.
    await vi.waitFor(() => expect(containersWithLabel(label)).toEqual([]), { timeout: 20_000, interval: 100 })
    rmSync(workspace, { recursive: true, force: true })
  })

  defineBashExecutorConformance('container executor', {
    create: (config) =>
      loadExecutorPlugin(ContainerExecutor, {
        image: TEST_IMAGE,
        engine: ENGINE_URL,
        workspace,
        labels: { 'dsh-bash.test': `conformance-${process.pid}` },
        ...config,
      }),
    // The containers' processes are visible from the host's /proc (same kernel, child namespaces).
    countProcesses: async (marker) => processesWith(marker).length,
    workdir: '/workspace',
    graceMs: 300,
    // Issue #15: the container pty is being built on the interactive seam (another branch); until
    // then the suite checks that interactive starts are refused clearly.
    interactive: { supported: false, reason: 'the container executor has no pty yet (issue #15, container pty pending)' },
  })
})
