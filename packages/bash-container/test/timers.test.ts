import { mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadExecutorPlugin, trackTimers } from '@deepseek-ai/dsh-bash/conformance'
import { afterAll, describe, expect, it } from 'vitest'
import { ContainerExecutor } from '../src/index.js'
import { containersWithLabel, ENGINE_URL, TEST_IMAGE, unavailableReason } from './docker.js'

const skip = unavailableReason()
if (skip) console.warn(`[dsh-bash-container] skipping the timer lifetime test: ${skip}`)

describe.skipIf(skip !== undefined)('container executor: timers bound to the plugin', () => {
  const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-container-timers-')))
  const testLabel = `timers-${process.pid}`
  afterAll(() => rmSync(workspace, { recursive: true, force: true }))

  it("unloading the plugin clears the idle session's timer: no timer of ours is left", async () => {
    const timers = trackTimers()
    try {
      const instance = await loadExecutorPlugin(ContainerExecutor, {
        image: TEST_IMAGE,
        engine: ENGINE_URL,
        workspace,
        graceMs: 300,
        idleTimeoutMs: 600_000,
        labels: { 'dsh-bash.test': testLabel },
      })
      const bash = instance.executor
      expect((await bash.run(bash.resolve({ command: 'echo idle' }))).stdout.text).toBe('idle\n')
      // The session is idle now: its removal timer runs (10 minutes).
      expect(timers.live().some((frame) => frame.includes('session-executor'))).toBe(true)
      await instance.dispose()
      await new Promise((resolve) => setImmediate(resolve))
      expect(timers.live()).toEqual([])
      expect(containersWithLabel(`dsh-bash.test=${testLabel}`)).toEqual([])
    } finally {
      timers.stop()
    }
  })
})
