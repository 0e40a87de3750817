import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { closeSync, constants, openSync, readFileSync, statSync, unlinkSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { findExecutable } from '../src/config.js'
import { LauncherHelper, nativeHelperPath } from '../src/helper-launch.js'
import type { LaunchPlan } from '../src/launch.js'
import { ProcessGroupTracker } from '../src/pgroup.js'
import { closePipe, FifoPipePool } from '../src/pipes.js'
import { scratchDir } from './helpers.js'

const dir = scratchDir()
afterAll(() => dir.remove())

const native = nativeHelperPath()
const BASH = findExecutable('bash')

/** The prebuilt helper is built from native/launcher.c by scripts/build-native.sh; these cases drive it directly. */
describe.skipIf(!native)('native launcher helper', () => {
  if (!native) console.log(`native launcher helper: skipped, none ships for ${process.platform}-${process.arch}`)

  async function withHelper(body: (helper: LauncherHelper, pool: FifoPipePool) => Promise<void>): Promise<void> {
    const helper = new LauncherHelper('native', native)
    const { pool, reason } = FifoPipePool.create(dir.path, findExecutable('mkfifo'))
    if (!pool) throw new Error(reason)
    try {
      await body(helper, pool)
    } finally {
      await helper.dispose()
      pool.dispose()
    }
  }

  const plan = async (pool: FifoPipePool, file: string, args: string[], extra: Partial<LaunchPlan> = {}): Promise<LaunchPlan> => ({
    file,
    args,
    cwd: dir.path,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    tracker: new ProcessGroupTracker(),
    cleanup: [],
    pipes: { stdout: await pool.take(), stderr: await pool.take() },
    ...extra,
  })

  const text = (stream: NodeJS.ReadableStream) =>
    new Promise<string>((resolve) => {
      let out = ''
      stream.on('data', (chunk: Buffer) => (out += chunk.toString()))
      stream.on('close', () => resolve(out))
    })

  it('a request whose counts do not fit its fields is refused as malformed, counts near SIZE_MAX included, and the helper keeps serving', () => {
    // The raw protocol: a byte count, a newline, then NUL-terminated fields (see native/launcher.c).
    const frame = (fields: string[]) => {
      const payload = Buffer.from(fields.map((field) => `${field}\0`).join(''))
      return Buffer.concat([Buffer.from(`${payload.length}\n`), payload])
    }
    const start = (id: number, nargs: string, nenv: string) => ['S', String(id), '/bin/true', '/', '/dev/null', '/dev/null', '0', nargs, '/bin/true', nenv, 'A=b']
    const input = Buffer.concat([
      frame(start(1, '18446744073709551615', '1')), // nargs = SIZE_MAX: the sums would wrap
      frame(start(2, '1', '18446744073709551614')), // nenv near SIZE_MAX
      frame(start(3, '5', '1')), // more argv than fields
      frame(['F', '4', '18446744073709551615']), // mkfifo with npaths = SIZE_MAX
      frame(start(5, '1', '1')), // a good one after them: still served
    ])
    const out = execFileSync(native!, [], { input, encoding: 'utf8', timeout: 10_000 })
    const replies = out.trim().split('\n').map((line) => JSON.parse(line) as { id: number; error?: string; pid?: number; exitCode?: number })
    for (const id of [1, 2, 3]) expect(replies.find((r) => r.id === id)?.error, `request ${id}`).toMatch(/malformed request/)
    expect(replies.find((r) => r.id === 4)?.error).toMatch(/mkfifo/)
    expect(replies.find((r) => r.id === 5 && r.pid !== undefined)).toBeDefined()
  })

  it('the shipped binary is the build of native/launcher.c (scripts/build-native.sh builds its hash in)', () => {
    const source = readFileSync(new URL('../native/launcher.c', import.meta.url))
    const sha = createHash('sha256').update(source).digest('hex')
    expect(readFileSync(native!).includes(Buffer.from(`dsh-launcher-source-sha256:${sha}`))).toBe(true)
  })

  it('a program that cannot be executed, or a missing workdir, is a start failure with the reason; its pipes are closed', async () => {
    await withHelper(async (helper, pool) => {
      const missing = await plan(pool, join(dir.path, 'no-such-program'), [])
      await expect(helper.launch(missing)).rejects.toThrow(/failed to start .*no-such-program: spawn .*no-such-program: No such file or directory/)
      expect(() => statSync(`/proc/self/fd/${missing.pipes!.stdout.readFd}`)).toThrow()
      const nowhere = await plan(pool, BASH, ['-c', 'true'], { cwd: join(dir.path, 'nowhere') })
      await expect(helper.launch(nowhere)).rejects.toThrow(/cannot enter the workdir .*nowhere: No such file or directory/)
      // The helper still serves the next command.
      const ok = await helper.launch(await plan(pool, BASH, ['--noprofile', '--norc', '-c', 'echo fine']))
      expect(await text(ok.stdout)).toBe('fine\n')
      expect(await ok.exited).toEqual({ exitCode: 0, signal: null })
      await ok.release()
    })
  })

  it('a command that has not reached its exec yet does not hold the next one: each start reports its exec on its own', async () => {
    await withHelper(async (helper, pool) => {
      // A FIFO with a writer and no reader: the child's open of it as stdout blocks (before exec) until a reader comes.
      const fifo = join(dir.path, 'no-reader')
      execFileSync('mkfifo', ['-m', '600', fifo])
      const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK)
      const writer = openSync(fifo, constants.O_WRONLY)
      closeSync(reader)
      const stuck = await plan(pool, BASH, ['--noprofile', '--norc', '-c', 'echo late'])
      const dummy = await pool.take()
      closePipe(stuck.pipes!.stdout)
      closeSync(dummy.writeFd)
      stuck.pipes!.stdout = { readFd: dummy.readFd, writeFd: writer }
      const stuckLaunch = helper.launch(stuck)
      let release = -1
      try {
        // With vfork the helper waited for that exec: this launch never got its pid.
        const next = await Promise.race([
          helper.launch(await plan(pool, BASH, ['--noprofile', '--norc', '-c', 'echo fine'])),
          new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the next start waited for the blocked one')), 20_000)),
        ])
        expect(await text(next.stdout)).toBe('fine\n')
        expect(await next.exited).toEqual({ exitCode: 0, signal: null })
        await next.release()
      } finally {
        // A reader: the blocked child's open returns, and it execs.
        release = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK)
      }
      const late = await stuckLaunch
      expect(await late.exited).toEqual({ exitCode: 0, signal: null })
      await late.release()
      closeSync(release)
      unlinkSync(fifo)
    })
  }, 60_000)

  it('a death by signal is reported by name; an exit code above 128 stays an exit code', async () => {
    await withHelper(async (helper, pool) => {
      const killed = await helper.launch(await plan(pool, BASH, ['--noprofile', '--norc', '-c', 'kill -USR1 $$']))
      expect(await killed.exited).toEqual({ exitCode: null, signal: 'SIGUSR1' })
      await killed.release()
      const exited = await helper.launch(await plan(pool, BASH, ['--noprofile', '--norc', '-c', 'exit 138']))
      expect(await exited.exited).toEqual({ exitCode: 138, signal: null })
      await exited.release()
    })
  })

  it('requests larger than its first buffer (64 KiB), several in one write, arrive whole', async () => {
    await withHelper(async (helper, pool) => {
      // One variable of 100 KB (the kernel refuses a single string of 128 KiB) and an argument of 100 KB.
      const big = 'x'.repeat(100_000)
      const plans = await Promise.all([0, 1, 2].map(async (i) => plan(pool, BASH, ['--noprofile', '--norc', '-c', `printf %s "$BIG" | wc -c; echo ${i} # ${big}`], { env: { PATH: process.env.PATH ?? '', BIG: big } })))
      const launched = await Promise.all(plans.map((p) => helper.launch(p)))
      const outputs = await Promise.all(launched.map((l) => text(l.stdout)))
      expect(outputs).toEqual(['100000\n0\n', '100000\n1\n', '100000\n2\n'])
      for (const l of launched) {
        await l.exited
        await l.release()
      }
    })
  })

  it('when the helper dies, its running command is reported ended without status, the next launch fails with the reason, and the command can still be killed', async () => {
    await withHelper(async (helper, pool) => {
      const running = await helper.launch(await plan(pool, BASH, ['--noprofile', '--norc', '-c', 'echo $PPID; exec sleep 30']))
      const helperPid = Number((await new Promise<string>((resolve) => running.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString())))).trim())
      try {
        expect(readFileSync(`/proc/${helperPid}/cmdline`, 'utf8')).toContain('dsh-launcher-linux-')
        process.kill(helperPid, 'SIGKILL')
        expect(await running.exited).toEqual({ exitCode: null, signal: null })
        await expect(helper.launch(await plan(pool, BASH, ['-c', 'true']))).rejects.toThrow(/the launcher helper exited \(SIGKILL\)/)
      } finally {
        // The orphan is the executor's to kill (its process group here), never the helper's.
        await running.terminate(200)
        await running.release()
      }
      expect(await running.countLeftovers()).toBe(0)
    })
  })

  it('makes FIFOs itself (mode 0600, no program forked); a path it cannot make is an error', async () => {
    await withHelper(async (helper) => {
      const paths = [join(dir.path, 'f1'), join(dir.path, 'f2')]
      await helper.mkfifo('/nonexistent-mkfifo-unused', paths)
      for (const path of paths) {
        const stat = statSync(path)
        expect(stat.isFIFO()).toBe(true)
        expect(stat.mode & 0o777).toBe(0o600)
      }
      await expect(helper.mkfifo('/unused', [join(dir.path, 'missing-dir', 'f3')])).rejects.toThrow(/mkfifo: No such file or directory/)
      execFileSync('rm', ['-f', ...paths])
    })
  })
})
