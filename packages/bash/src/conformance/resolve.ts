import { posix } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { SuiteContext } from './suite-context.js'

/** The conformance tests of `describe('resolve()')`. */
export function resolveTests(suite: SuiteContext): void {
  const { workdir, executor } = suite
  describe('resolve()', () => {
    it('applies the default timeout and workdir, and always has the owner and sandboxMode keys', async () => {
      const bash = await executor({ cwd: workdir, timeoutMs: 1234, maxTimeoutMs: 5000 })
      const spec = bash.resolve({ command: 'true' })
      expect(spec.command).toBe('true')
      expect(spec.timeoutMs).toBe(1234)
      expect(spec.workdir).toBe(workdir)
      expect(Object.keys(spec)).toContain('owner')
      expect(spec.owner).toBeUndefined()
      expect(Object.keys(spec)).toContain('sandboxMode')
      expect(spec.sandboxMode).toBe(bash.sandboxMode)
    })

    it('caps a requested timeout at the maximum and keeps a smaller one', async () => {
      const bash = await executor({ cwd: workdir, timeoutMs: 1000, maxTimeoutMs: 5000 })
      expect(bash.resolve({ command: 'true', timeoutMs: 999_999 }).timeoutMs).toBe(5000)
      expect(bash.resolve({ command: 'true', timeoutMs: 5000 }).timeoutMs).toBe(5000)
      expect(bash.resolve({ command: 'true', timeoutMs: 10 }).timeoutMs).toBe(10)
    })

    it('rejects non-positive and non-finite timeouts instead of running without one', async () => {
      const bash = await executor({ cwd: workdir })
      for (const timeoutMs of [0, -1, -0.5, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
        expect(() => bash.resolve({ command: 'true', timeoutMs }), String(timeoutMs)).toThrow(/^invalid timeoutMs: expected a positive number/)
      }
    })

    it('rejects an empty or blank command', async () => {
      const bash = await executor({ cwd: workdir })
      expect(() => bash.resolve({ command: '' })).toThrow('invalid command: expected a non-empty string')
      expect(() => bash.resolve({ command: '  \n' })).toThrow('invalid command: expected a non-empty string')
    })

    it('resolves a relative workdir against the configured cwd and keeps an absolute one', async () => {
      const bash = await executor({ cwd: workdir })
      expect(bash.resolve({ command: 'true', workdir: 'sub/dir' }).workdir).toBe(posix.join(workdir, 'sub/dir'))
      expect(bash.resolve({ command: 'true', workdir: './a/../b' }).workdir).toBe(posix.join(workdir, 'b'))
      expect(bash.resolve({ command: 'true', workdir: '/' }).workdir).toBe('/')
    })

    it('passes owner, signal, stdin and env through', async () => {
      const bash = await executor({ cwd: workdir })
      const controller = new AbortController()
      const spec = bash.resolve({ command: 'true', owner: 'session-1', signal: controller.signal, stdin: 'in', env: { A: 'b' } })
      expect(spec.owner).toBe('session-1')
      expect(spec.signal).toBe(controller.signal)
      expect(spec.stdin).toBe('in')
      expect(spec.env).toEqual({ A: 'b' })
    })
  })
}
