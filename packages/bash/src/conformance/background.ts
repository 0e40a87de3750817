import { describe, expect, it, vi } from 'vitest'
import type { BashTask } from '../types.js'
import { delay, splitMarker as q, uniqueMarker as digits, WAIT } from './helpers.js'
import type { SuiteContext } from './suite-context.js'

/** The conformance tests of `describe('background tasks')`. */
export function backgroundTests(suite: SuiteContext): void {
  const { workdir, count, executor, start, seen } = suite
  describe('background tasks', () => {
    it('ids are bash-1, bash-2, … in order; get() and list() find them oldest first', async () => {
      const bash = await executor()
      const first = start(bash, 'true')
      const second = start(bash, 'true')
      const third = start(bash, 'exit 1')
      expect([first.id, second.id, third.id]).toEqual(['bash-1', 'bash-2', 'bash-3'])
      expect(bash.list().map((task) => task.id)).toEqual(['bash-1', 'bash-2', 'bash-3'])
      expect(bash.get('bash-2')).toBe(second)
      expect(bash.get('bash-4')).toBeUndefined()
      await Promise.all([first.done, second.done, third.done])
      expect(start(bash, 'true').id).toBe('bash-4')
    })

    it('start() returns at once with a running task, and no timeout applies', async () => {
      const bash = await executor({ timeoutMs: 100, maxTimeoutMs: 100 })
      const m = digits()
      const task = start(bash, `sleep 0.6${q(m)}; echo done`)
      expect(task.status).toBe('running')
      expect(task.exitCode).toBeNull()
      expect(task.endedAt).toBeNull()
      expect(task.startedAt).toEqual(expect.any(Number))
      expect(task.command).toBe(`sleep 0.6${q(m)}; echo done`)
      expect(task.workdir).toBe(workdir)
      expect(await task.done).toBe(task)
      expect(task).toMatchObject({ status: 'completed', exitCode: 0, signal: null })
      expect(task.endedAt).toBeGreaterThanOrEqual(task.startedAt)
      expect(bash.readOutput(task.id).delta).toBe('done\n')
    })

    it('ownerOf() returns the owner stored at start', async () => {
      const bash = await executor()
      const owned = start(bash, 'true', { owner: 'session-a' })
      const open = start(bash, 'true')
      expect(bash.ownerOf(owned.id)).toBe('session-a')
      expect(bash.ownerOf(open.id)).toBeUndefined()
      expect(bash.ownerOf('bash-99')).toBeUndefined()
      await Promise.all([owned.done, open.done])
      expect(bash.ownerOf(owned.id)).toBe('session-a')
    })

    it('incremental reads never repeat or skip a byte', async () => {
      const bash = await executor()
      const lines = 3000
      const task = start(bash, `for i in $(seq 1 ${lines}); do echo "line $i"; if [ $((i % 250)) -eq 0 ]; then sleep 0.02; fi; done`)
      let text = ''
      let reads = 0
      while (task.status === 'running') {
        const read = bash.readOutput(task.id)
        expect(read.lossy).toBe(false)
        text += read.delta
        reads++
        await delay(3)
      }
      const last = bash.readOutput(task.id)
      text += last.delta
      expect(last.lossy).toBe(false)
      let expected = ''
      for (let i = 1; i <= lines; i++) expected += `line ${i}\n`
      expect(text).toBe(expected)
      expect(reads).toBeGreaterThan(1)
      expect(bash.readOutput(task.id).delta).toBe('')
    })

    it("killOwner(): stops that owner's running tasks only, says how many, leaves them readable", async () => {
      const bash = await executor()
      const mine = digits()
      const theirs = digits()
      const a1 = start(bash, `echo a1; sleep 1000.${q(mine)}`, { owner: 'owner-a' })
      const a2 = start(bash, `sleep 1000.${q(mine)}`, { owner: 'owner-a' })
      const done = start(bash, 'echo over', { owner: 'owner-a' })
      const b = start(bash, `sleep 1000.${q(theirs)}`, { owner: 'owner-b' })
      const open = start(bash, `sleep 1000.${q(theirs)}`)
      await done.done
      await seen(mine)
      await seen(theirs)
      expect(await bash.killOwner('owner-a')).toBe(2)
      expect([a1.status, a2.status, done.status]).toEqual(['killed', 'killed', 'completed'])
      expect(await count(mine)).toBe(0)
      expect([b.status, open.status]).toEqual(['running', 'running'])
      expect(bash.readOutput(done.id).delta).toBe('over\n')
      expect(await bash.killOwner('owner-a')).toBe(0)
      expect(await bash.killOwner('owner-nobody')).toBe(0)
      await Promise.all([bash.kill(b.id), bash.kill(open.id)])
      expect(await count(theirs)).toBe(0)
    })

    it('a read shows new stderr in a [stderr] section after stdout', async () => {
      const bash = await executor()
      const both = start(bash, 'echo out; echo err >&2')
      const noNewline = start(bash, 'printf out; printf err >&2')
      const onlyErr = start(bash, 'echo err >&2')
      const nothing = start(bash, 'true')
      await Promise.all([both.done, noNewline.done, onlyErr.done, nothing.done])
      expect(bash.readOutput(both.id)).toMatchObject({ delta: 'out\n[stderr]\nerr\n', streams: { stdout: 'out\n', stderr: 'err\n' }, screen: false, lossy: false, spillPaths: {} })
      expect(bash.readOutput(both.id).delta).toBe('')
      expect(bash.readOutput(noNewline.id).delta).toBe('out\n[stderr]\nerr')
      expect(bash.readOutput(onlyErr.id).delta).toBe('[stderr]\nerr\n')
      const read = bash.readOutput(nothing.id)
      expect(read.delta).toBe('')
      expect(read.task).toBe(nothing)
    })

    it('status: completed with its exit code, killed for a signal death of its own', async () => {
      const bash = await executor()
      const ok = start(bash, 'true')
      const three = start(bash, 'exit 3')
      const nine = start(bash, 'kill -9 $$')
      const term = start(bash, 'kill -TERM $$')
      await Promise.all([ok.done, three.done, nine.done, term.done])
      expect(ok).toMatchObject({ status: 'completed', exitCode: 0, signal: null })
      expect(three).toMatchObject({ status: 'completed', exitCode: 3, signal: null })
      expect(nine).toMatchObject({ status: 'killed', exitCode: null, signal: 'SIGKILL' })
      expect(term).toMatchObject({ status: 'killed', exitCode: null, signal: 'SIGTERM' })
      for (const task of [ok, three, nine, term]) expect(task.endedAt).toEqual(expect.any(Number))
    })

    it('a task over when no process is left, not when the shell exits', async () => {
      const bash = await executor()
      const m = digits()
      const task = start(bash, `(sleep 0.3${q(m)}; echo late) & echo early`)
      await task.done
      expect(task.status).toBe('completed')
      expect(bash.readOutput(task.id).delta).toBe('early\nlate\n')
      expect(await count(m)).toBe(0)
    })

    it('kill(): true when it stopped the task, then false; the task is killed and its processes gone', async () => {
      const bash = await executor()
      const m = digits()
      const task = start(bash, `echo started; sleep 1000.${q(m)}`)
      await seen(m)
      let output = ''
      await vi.waitFor(() => {
        output += bash.readOutput(task.id).delta
        expect(output).toBe('started\n')
      }, WAIT)
      expect(await bash.kill(task.id)).toBe(true)
      expect(task.status).toBe('killed')
      expect(task.endedAt).toEqual(expect.any(Number))
      expect(await count(m)).toBe(0)
      expect(await bash.kill(task.id)).toBe(false)
      expect(task.status).toBe('killed')
      expect(bash.readOutput(task.id).delta).toBe('')
    })

    it('a task stopped by kill() is killed even when it handles SIGTERM and exits 0', async () => {
      const bash = await executor()
      const m = digits()
      const task = start(bash, `trap 'echo bye; exit 0' TERM; echo ready; sleep 1000.${q(m)} & wait`)
      let output = ''
      await vi.waitFor(() => {
        output += bash.readOutput(task.id).delta
        expect(output).toBe('ready\n')
      }, WAIT)
      await seen(m)
      expect(await bash.kill(task.id)).toBe(true)
      expect(task).toMatchObject({ status: 'killed', exitCode: 0 })
      expect(bash.readOutput(task.id).delta).toBe('bye\n')
      expect(await count(m)).toBe(0)
    })

    it('kill() of a task that finished by itself is false and keeps its status', async () => {
      const bash = await executor()
      const task = start(bash, 'echo hi')
      await task.done
      expect(await bash.kill(task.id)).toBe(false)
      expect(task).toMatchObject({ status: 'completed', exitCode: 0 })
    })

    it('a task that ignores SIGTERM is killed anyway', async () => {
      const bash = await executor()
      const m = digits()
      const task = start(bash, `trap '' TERM; sleep 1000.${q(m)}; echo not reached`)
      await seen(m)
      expect(await bash.kill(task.id)).toBe(true)
      expect(task).toMatchObject({ status: 'killed', signal: 'SIGKILL' })
      expect(await count(m)).toBe(0)
    })

    it('the task signal stops a background task', async () => {
      const bash = await executor()
      const m = digits()
      const controller = new AbortController()
      const task = start(bash, `sleep 1000.${q(m)}`, { signal: controller.signal })
      await seen(m)
      controller.abort()
      await task.done
      expect(task.status).toBe('killed')
      expect(await count(m)).toBe(0)
      expect(await bash.kill(task.id)).toBe(false)
    })

    it('unknown ids give the stable error', async () => {
      const bash = await executor()
      const unknown = (id: string) => expect.objectContaining({ message: `unknown bash task "${id}"`, code: 'DSH_UNKNOWN_TASK' })
      expect(() => bash.readOutput('bash-99')).toThrow(unknown('bash-99'))
      await expect(bash.kill('bash-99')).rejects.toThrow(unknown('bash-99'))
      expect(() => bash.readOutput('nope')).toThrow(unknown('nope'))
      expect(bash.get('bash-99')).toBeUndefined()
    })

    it('finished tasks beyond maxFinishedTasks are evicted oldest first', async () => {
      const bash = await executor({ maxFinishedTasks: 2 })
      const tasks: BashTask[] = []
      for (let i = 0; i < 4; i++) {
        const task = start(bash, `echo ${i}`)
        await task.done
        tasks.push(task)
      }
      expect(bash.list().map((task) => task.id)).toEqual(['bash-3', 'bash-4'])
      expect(() => bash.readOutput('bash-1')).toThrow('unknown bash task "bash-1"')
      expect(bash.readOutput('bash-4').delta).toBe('3\n')
    })
  })
}
