import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { BASH_ERROR } from '../errors.js'
import { SANDBOX_MODES } from '../sandbox-modes.js'
import { uniqueMarker as digits, WAIT } from './helpers.js'
import type { SuiteContext } from './suite-context.js'

/**
 * The executor's `capabilities`, checked against what it does: front ends build schemas and
 * options from them, so a capability claimed and not delivered (or delivered and not claimed)
 * is a bug of the executor.
 */
export function capabilityTests(suite: SuiteContext): void {
  const { executor, run, workdir } = suite
  describe('capabilities (each checked against behaviour)', () => {
    it('are complete and consistent: modes in SANDBOX_MODES order, the default among them, resize only with terminals', async () => {
      const bash = await executor()
      const caps = bash.capabilities
      expect(Object.keys(caps).sort()).toEqual(['interactive', 'limits', 'networkModes', 'paths', 'resize', 'sandboxModes'])
      const ranks = caps.sandboxModes.map((mode) => (SANDBOX_MODES as readonly string[]).indexOf(mode))
      expect(ranks.every((rank) => rank >= 0)).toBe(true)
      expect(ranks).toEqual([...ranks].sort((a, b) => a - b))
      if (caps.sandboxModes.length === 0) expect(bash.sandboxMode).toBeUndefined()
      else expect(caps.sandboxModes).toContain(bash.sandboxMode)
      expect(['host', 'remote']).toContain(caps.paths)
      if (!caps.interactive) expect(caps.resize).toBe(false)
      // Fixed for the executor's life.
      expect(bash.capabilities).toEqual(caps)
    })

    it('sandboxModes: each mode resolves as itself; an executor without modes ignores a requested one', async () => {
      const bash = await executor()
      const { sandboxModes } = bash.capabilities
      if (sandboxModes.length === 0) {
        expect(bash.resolve({ command: 'true', workdir, sandboxMode: 'read-only' }).sandboxMode).toBeUndefined()
        return
      }
      for (const mode of sandboxModes) expect(bash.resolve({ command: 'true', workdir, sandboxMode: mode }).sandboxMode).toBe(mode)
    })

    it('interactive: a terminal when claimed, else the coded refusal', async () => {
      const bash = await executor()
      const spec = bash.resolve({ command: '[ -t 0 ] && echo on-a-tty', workdir, interactive: true })
      if (!bash.capabilities.interactive) {
        expect(() => bash.start(spec)).toThrow(expect.objectContaining({ code: BASH_ERROR.interactiveUnsupported }))
        return
      }
      const task = bash.start(spec)
      await task.done
      expect(task.interactive).toBe(true)
      expect(bash.readOutput(task.id).delta).toContain('on-a-tty')
    })

    it('resize: the program sees the new size when claimed; refused (the size unchanged) when not', async () => {
      const bash = await executor()
      if (!bash.capabilities.interactive) return
      const task = bash.start(bash.resolve({ command: 'read -r line; stty size', workdir, interactive: true }))
      let resized = true
      try {
        await bash.resize!(task.id, 100, 30)
      } catch {
        resized = false
      }
      expect(resized).toBe(bash.capabilities.resize)
      await bash.write(task.id, '\n')
      await task.done
      let text = ''
      await vi.waitFor(() => {
        text += bash.readOutput(task.id).delta
        expect(text).toMatch(/\d+ \d+/)
      }, WAIT)
      expect(text).toContain(bash.capabilities.resize ? '30 100' : '40 120')
    })

    it('paths: host: a file put at a path of this machine is what the command reads at that path', async () => {
      const bash = await executor()
      if (bash.capabilities.paths !== 'host') return
      const path = join(workdir, `dsh-capability-probe-${digits()}`)
      writeFileSync(path, 'here\n')
      try {
        const result = await run(bash, `cat ${path}`)
        expect(result.stdout.text).toBe('here\n')
      } finally {
        rmSync(path, { force: true })
      }
    })
  })
}
