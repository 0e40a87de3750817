/**
 * The conformance suite every bash executor must pass (local, sandbox, SSH, …).
 *
 * Usage, in a vitest test file of an executor package:
 *
 * ```ts
 * import { defineBashExecutorConformance } from '@deepseek-ai/dsh-bash/conformance'
 * defineBashExecutorConformance('local executor', {
 *   async create(config) {
 *     const ctx = new Context()
 *     const fork = ctx.plugin(LocalExecutor, { graceMs: 300, ...config })
 *     const executor = ctx.bash
 *     return { ctx, executor, dispose: async () => { fork.dispose(); await executor.shutdown() } }
 *   },
 *   countProcesses: async (marker) => pidsWithCmdline(marker).length,
 * })
 * ```
 *
 * The suite asserts facts, never timings: where a hang is what is tested, it asserts that a call
 * returned well before a long timeout. It starts real processes whose argv carries a unique marker
 * (`sleep 1000.<digits>`), and asks `countProcesses` whether any of them survived.
 *
 * This module imports `vitest` (an optional peer dependency); import it from tests only.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, posix } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Context } from 'cordis'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { defineInteractiveConformance } from './conformance-interactive.js'
import type { BashExecutor } from './executor.js'
import type { BashExecRequest, BashExecSpec, BashRunResult, BashTask } from './types.js'

/**
 * Settings the suite asks for. Every executor built on `@deepseek-ai/dsh-bash-kit` understands
 * them; the factory merges them over its own base config.
 */
export interface ConformanceConfig {
  cwd?: string
  timeoutMs?: number
  maxTimeoutMs?: number
  maxOutputBytes?: number
  graceMs?: number
  maxSpillBytes?: number
  maxFinishedTasks?: number
  keepSpillFiles?: boolean
}

/** One executor created for one test. */
export interface ConformanceInstance {
  /** The cordis context the executor is registered on (`ctx.bash`); plugins are loaded on it. */
  ctx: Context
  /** The executor, as `ctx.bash`. */
  executor: BashExecutor
  /** Unloads the executor plugin and resolves once its disposal is complete. Called at most once per instance by the suite, but must be idempotent. */
  dispose(): Promise<void>
}

/**
 * Loads an executor plugin on a fresh root context (for tests and benchmarks). Rejects with the
 * plugin's own error when it fails to load. `dispose()` unloads it and waits for its shutdown.
 */
export async function loadExecutorPlugin<E extends BashExecutor>(
  plugin: new (ctx: Context, config: never) => E,
  config: object,
): Promise<ConformanceInstance & { executor: E }> {
  const ctx = new Context()
  let error: unknown
  ctx.on('internal/error', (e: unknown) => {
    error = e
  })
  const fork = ctx.plugin(plugin as never, config as never)
  const executor = ctx.get('bash') as E | undefined
  if (!executor) throw error ?? new Error(`the executor plugin ${plugin.name} did not load`)
  let disposed: Promise<void> | undefined
  return {
    ctx,
    executor,
    dispose() {
      disposed ??= (async () => {
        fork.dispose()
        await executor.shutdown()
      })()
      return disposed
    },
  }
}

export interface ConformanceOptions {
  /** Creates a fresh executor (task ids start at `bash-1`) with `config` merged over the factory's base config. */
  create(config?: ConformanceConfig): Promise<ConformanceInstance>
  /**
   * Number of live processes (zombies excluded) on the executor's machine whose command line
   * contains `marker`.
   */
  countProcesses(marker: string): Promise<number>
  /** An existing directory on the executor's machine, as a physical path (no symlinks). Default: `os.tmpdir()`. */
  workdir?: string
  /** The grace period (ms) between SIGTERM and SIGKILL the suite configures. Default 300. */
  graceMs?: number
  /**
   * False for executors that cannot follow processes that leave the process group (`setsid`,
   * double fork): the escapee tests are skipped. Default true.
   */
  followsEscapees?: boolean
  /** Reads a spill file. Default: the local file system (collectors run in-process). */
  readSpillFile?(path: string): Promise<Buffer>
  /**
   * How to load this executor in a Node.js process of its own (the "server"), so that the suite can
   * start that server with extra open descriptors (fd 3 and fd 200, not close-on-exec, as a parent
   * shell's `exec 200>>log` leaves them) and check that none reaches a command. Omitted (an executor
   * whose commands never share the server's process table, like SSH): that test is not defined.
   */
  serverProcess?: ServerProcessOptions
  /**
   * Interactive tasks (a terminal, `write`): default true. `false` only with a reason, for an
   * executor that cannot do it yet: the suite then checks that it refuses them clearly.
   */
  interactive?: true | { supported: false; reason: string }
}

/** An executor plugin loaded in a separate Node.js process. */
export interface ServerProcessOptions {
  /** Absolute path (or file URL) of the built module that exports the plugin. */
  module: string
  /** The plugin's export name (`LocalExecutor`). */
  exportName: string
  /** The plugin's config (JSON). */
  config: Record<string, unknown>
  /** Where the child runs (it must resolve `cordis` from there). Default: the module's directory. */
  cwd?: string
}

/** How long a "hang" test lets a call run before the suite would call it a hang. */
const LONG_TIMEOUT_MS = 60_000
/** "Well before the long timeout". */
const PROMPT_MS = 30_000
const WAIT = { timeout: 20_000, interval: 20 }
/** A timeout for commands that must install a trap before it fires. */
const TRAP_TIMEOUT_MS = 1_500

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Random digits: a process marker that appears in argv (`sleep 1000.<digits>`). */
function digits(): string {
  let text = ''
  while (text.length < 12) text += Math.floor(Math.random() * 1e9).toString()
  return text.slice(0, 12)
}

/**
 * A marker as shell code, split by an empty quote: the argv of the shell that runs the command does
 * not contain the marker, only the argv of the process it starts (`sleep 1000.<marker>`) does.
 */
function q(marker: string): string {
  return `${marker.slice(0, 6)}''${marker.slice(6)}`
}

/** A shell single-quoted literal. */
function quote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`
}

/** `size` bytes of numbered lines (the last one possibly cut), so that any misplaced byte shows. */
function numberedBytes(size: number): string {
  let text = ''
  for (let i = 1; text.length < size; i++) text += `line ${i}\n`
  return text.slice(0, size)
}

/**
 * Defines the conformance tests for one executor. Call it at the top level of a test file.
 */
export function defineBashExecutorConformance(name: string, options: ConformanceOptions): void {
  const graceMs = options.graceMs ?? 300
  const workdir = options.workdir ?? tmpdir()
  const followsEscapees = options.followsEscapees ?? true
  // An executor that cannot follow escapees (process-group containment) documents that limit and
  // tests it itself; these tests are not defined for it rather than skipped.
  const itEscapees = followsEscapees ? it : (((..._args: unknown[]) => undefined) as unknown as typeof it)
  const readSpill = options.readSpillFile ?? ((path: string) => readFile(path))
  const count = (marker: string) => options.countProcesses(marker)

  let instances: ConformanceInstance[] = []

  /** A fresh executor, disposed after the test. */
  async function create(config: ConformanceConfig = {}): Promise<ConformanceInstance> {
    const instance = await options.create({ graceMs, ...config })
    instances.push(instance)
    return instance
  }

  async function executor(config?: ConformanceConfig): Promise<BashExecutor> {
    return (await create(config)).executor
  }

  type Extra = Omit<BashExecRequest, 'command'>

  const run = (bash: BashExecutor, command: string, extra: Extra = {}) => bash.run(bash.resolve({ command, workdir, ...extra }))

  const start = (bash: BashExecutor, command: string, extra: Extra = {}) =>
    bash.start(bash.resolve({ command, workdir, ...extra }))

  /** Waits until at least one process with the marker is alive. */
  const seen = (marker: string) => vi.waitFor(async () => expect(await count(marker)).toBeGreaterThan(0), WAIT)

  afterEach(async () => {
    const created = instances
    instances = []
    await Promise.all(created.map((instance) => instance.dispose()))
  })

  describe(`bash executor conformance: ${name}`, () => {
    defineInteractiveConformance({ executor, countProcesses: count, workdir, readSpillFile: readSpill, ...(options.interactive === undefined || options.interactive === true ? {} : { interactive: false, reason: options.interactive.reason }) })
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

    describe('foreground results', () => {
      it('echo: stdout, exit 0, no flags', async () => {
        const result = await run(await executor(), 'echo hello')
        expect(result).toMatchObject({
          exitCode: 0,
          signal: null,
          timedOut: false,
          aborted: false,
          leftoverProcesses: 0,
          stdout: { text: 'hello\n', truncated: false, droppedBytes: 0, totalBytes: 6 },
          stderr: { text: '', truncated: false, droppedBytes: 0, totalBytes: 0 },
        })
        expect(result.stdout.spillPath).toBeUndefined()
        expect(result.durationMs).toBeGreaterThanOrEqual(0)
      })

      it('stderr is collected apart from stdout', async () => {
        const result = await run(await executor(), 'echo out; echo err >&2')
        expect(result.stdout.text).toBe('out\n')
        expect(result.stderr.text).toBe('err\n')
        expect(result.exitCode).toBe(0)
      })

      it('a non-zero exit resolves with its code', async () => {
        const result = await run(await executor(), 'echo failing; exit 3')
        expect(result).toMatchObject({ exitCode: 3, signal: null, timedOut: false, aborted: false })
        expect(result.stdout.text).toBe('failing\n')
      })

      it('runs in the requested workdir with a fresh shell', async () => {
        const bash = await executor()
        expect((await run(bash, 'pwd -P')).stdout.text).toBe(`${workdir}\n`)
        expect((await run(bash, 'pwd -P', { workdir: '/' })).stdout.text).toBe('/\n')
        await run(bash, 'X_CONFORMANCE=1; cd /')
        expect((await run(bash, 'printf "%s" "${X_CONFORMANCE-unset}"; pwd -P')).stdout.text).toBe(`unset${workdir}\n`)
      })

      it('a missing workdir rejects with "workdir does not exist: <path>"', async () => {
        const bash = await executor()
        const missing = posix.join(workdir, `no-such-dir-${digits()}`)
        await expect(run(bash, 'true', { workdir: missing })).rejects.toThrow(`workdir does not exist: ${missing}`)
      })

      it('stdin is empty by default, and a trusted caller can give stdin and env', async () => {
        const bash = await executor()
        expect((await run(bash, 'cat; echo end')).stdout.text).toBe('end\n')
        expect((await run(bash, 'cat', { stdin: 'from stdin\nline 2\n' })).stdout.text).toBe('from stdin\nline 2\n')
        expect((await run(bash, 'od -An -tx1 | tr -d " \\n"', { stdin: new Uint8Array([0, 1, 255]) })).stdout.text).toBe('0001ff')
        const env = { DSH_CONFORMANCE_VAR: 'a b\tc', PATH: '/usr/bin:/bin' }
        expect((await run(bash, 'printf "%s|%s" "$DSH_CONFORMANCE_VAR" "$PATH"', { env })).stdout.text).toBe('a b\tc|/usr/bin:/bin')
      })

      it('UTF-8 multi-byte output arrives intact, even split across writes', async () => {
        const bash = await executor()
        const whole = await run(bash, "printf 'h\\xc3\\xa9llo \\xe2\\x82\\xac \\xf0\\x9f\\x98\\x80\\n'")
        expect(whole.stdout.text).toBe('héllo € 😀\n')
        const split = await run(bash, "printf '\\xe2'; sleep 0.05; printf '\\x82\\xac'; printf '\\xf0\\x9f' >&2; sleep 0.05; printf '\\x98\\x80' >&2")
        expect(split.stdout.text).toBe('€')
        expect(split.stderr.text).toBe('😀')
      })

      it('onOutput receives the live output of a foreground run, whole characters only, without changing the result', async () => {
        const bash = await executor()
        const seen = { stdout: '', stderr: '' }
        let beforeEnd = ''
        const result = await run(bash, "echo first; printf '\\xe2'; sleep 0.3; printf '\\x82\\xac\\n'; echo oops >&2", {
          onOutput: (stream: 'stdout' | 'stderr', text: string) => {
            seen[stream] += text
            if (stream === 'stdout' && beforeEnd === '') beforeEnd = seen.stdout
          },
        })
        expect(seen).toEqual({ stdout: 'first\n€\n', stderr: 'oops\n' })
        expect(beforeEnd.startsWith('first\n')).toBe(true)
        expect(result.stdout.text).toBe('first\n€\n')
        expect(result.stderr.text).toBe('oops\n')
        const quiet = await run(bash, 'echo x', { onOutput: () => { throw new Error('display down') } })
        expect(quiet.stdout.text).toBe('x\n')
      })

      it('an output of exactly maxOutputBytes is kept whole; one byte more is truncated with a complete spill file', async () => {
        const bash = await executor({ maxOutputBytes: 1000 })
        const exact = numberedBytes(1000)
        const atCap = await run(bash, `printf '%s' ${quote(exact)}; printf '%s' ${quote(exact)} >&2`)
        expect(atCap.stdout).toMatchObject({ text: exact, truncated: false, droppedBytes: 0, totalBytes: 1000 })
        expect(atCap.stdout.spillPath).toBeUndefined()
        expect(atCap.stderr).toMatchObject({ text: exact, truncated: false })

        const over = numberedBytes(1001)
        const result = await run(bash, `printf '%s' ${quote(over)}; printf '%s' ${quote(over)} >&2`)
        for (const stream of [result.stdout, result.stderr]) {
          expect(stream).toMatchObject({ text: over.slice(1), truncated: true, droppedBytes: 1, totalBytes: 1001 })
          expect(stream.spillPath).toEqual(expect.any(String))
          expect((await readSpill(stream.spillPath!)).toString('utf8')).toBe(over)
        }
        expect(result.stdout.spillPath).not.toBe(result.stderr.spillPath)
      })
    })

    describe('descriptors: pipes as in a terminal, nothing inherited', () => {
      it('/dev/stdout, /dev/stderr and /dev/fd/N open (real pipes, not sockets)', async () => {
        const bash = await executor()
        const result = await run(bash, 'echo x > /dev/stderr; echo y > /dev/stdout; echo z > /dev/fd/1; echo w > /dev/fd/2')
        expect(result).toMatchObject({ exitCode: 0, stdout: { text: 'y\nz\n' }, stderr: { text: 'x\nw\n' } })
      })

      it('tee /dev/stdout writes twice to stdout', async () => {
        const result = await run(await executor(), 'echo t | tee /dev/stdout; echo e | tee /dev/stderr >/dev/null')
        expect(result).toMatchObject({ exitCode: 0, stdout: { text: 't\nt\n' }, stderr: { text: 'e\n' } })
      })

      it('exec 3>/dev/stdout and 4>/dev/stderr give descriptors that reach the streams', async () => {
        const result = await run(await executor(), 'exec 3>/dev/stdout 4>/dev/stderr; echo y >&3; echo z >&4; exec 3>&- 4>&-; echo end')
        expect(result).toMatchObject({ exitCode: 0, stdout: { text: 'y\nend\n' }, stderr: { text: 'z\n' } })
      })

      it('cat file > /dev/fd/1 copies the file to stdout', async () => {
        // A private temp file (the workdir may be read-only under a sandbox).
        const result = await run(await executor(), 'f=$(mktemp) && printf "line 1\\nline 2\\n" >"$f" && cat "$f" > /dev/fd/1; s=$?; rm -f "$f"; exit $s')
        expect(result).toMatchObject({ exitCode: 0, stdout: { text: 'line 1\nline 2\n' }, stderr: { text: '' } })
      })

      it('cat /dev/stdin reads an empty stdin and succeeds', async () => {
        const result = await run(await executor(), 'cat /dev/stdin; echo "status $?"; cat </dev/stdin | wc -c')
        expect(result).toMatchObject({ exitCode: 0, stderr: { text: '' } })
        expect(result.stdout.text.replaceAll(' ', '')).toBe('status0\n0\n')
      })

      it('stdout and stderr are pipes (FIFOs), stdin is /dev/null', async () => {
        const result = await run(await executor(), 'stat -L -c %F /proc/self/fd/1 /proc/self/fd/2; test -p /dev/stdout && test -p /dev/stderr && echo pipes; stat -L -c %t,%T /dev/stdin; stat -L -c %t,%T /dev/null')
        expect(result.exitCode).toBe(0)
        const lines = result.stdout.text.split('\n')
        expect(lines.slice(0, 3)).toEqual(['fifo', 'fifo', 'pipes'])
        // stdin is the null device (same major,minor as /dev/null).
        expect(lines[3]).toBe(lines[4])
      })

      it('a command starts with only descriptors 0, 1 and 2 (foreground and background)', async () => {
        const bash = await executor()
        // `ls` opens the directory it lists as descriptor 3: that one is its own.
        const result = await run(bash, 'ls /proc/self/fd')
        expect(result.stdout.text).toBe('0\n1\n2\n3\n')
        const task = start(bash, 'ls /proc/self/fd')
        await task.done
        expect(bash.readOutput(task.id).delta).toBe('0\n1\n2\n3\n')
      })

      if (options.serverProcess) {
        const server = options.serverProcess
        it("descriptors the server inherited (fd 3, fd 200) never reach a command", async () => {
          const scratch = await mkdtemp(join(tmpdir(), 'dsh-bash-conformance-fds-'))
          try {
            const log = join(scratch, 'inherited.log')
            const report = await runServerProcess(server, log, workdir)
            // The server itself really has them (else the test proves nothing)…
            expect(report.serverFds).toEqual(expect.arrayContaining(['3', '200']))
            // …and no command sees them: not the foreground one, not the background one.
            expect(report.foreground).toBe('0\n1\n2\n3\n')
            expect(report.background).toBe('0\n1\n2\n3\n')
            expect(report.write).toMatch(/^closed/)
            expect(await readFile(log, 'utf8')).toBe('')
          } finally {
            await rm(scratch, { recursive: true, force: true })
          }
        })
      }
    })

    describe('timeouts, aborts and signals', () => {
      it('a timeout stops a sleep with SIGTERM and reports timedOut', async () => {
        const bash = await executor()
        const m = digits()
        const result = await run(bash, `sleep 1000.${q(m)}`, { timeoutMs: 300 })
        expect(result).toMatchObject({ timedOut: true, aborted: false, signal: 'SIGTERM', exitCode: null, timeoutMs: 300, leftoverProcesses: 0 })
        expect(await count(m)).toBe(0)
      })

      it('the default timeout applies, capped by the maximum', async () => {
        const bash = await executor({ timeoutMs: 200, maxTimeoutMs: 300 })
        const m = digits()
        const byDefault = await run(bash, `sleep 1000.${q(m)}`)
        expect(byDefault).toMatchObject({ timedOut: true, timeoutMs: 200 })
        const capped = await run(bash, `sleep 1000.${q(m)}`, { timeoutMs: LONG_TIMEOUT_MS })
        expect(capped).toMatchObject({ timedOut: true, timeoutMs: 300, signal: 'SIGTERM' })
        expect(await count(m)).toBe(0)
      })

      it('a command that traps SIGTERM and exits 0 still reports timedOut', async () => {
        const bash = await executor()
        const m = digits()
        // Long enough for the shell to set its trap first, even on a loaded machine.
        const result = await run(bash, `trap 'echo trapped; exit 0' TERM; sleep 1000.${q(m)} & wait`, { timeoutMs: TRAP_TIMEOUT_MS })
        expect(result).toMatchObject({ timedOut: true, aborted: false, exitCode: 0, signal: null })
        expect(result.stdout.text).toBe('trapped\n')
        expect(await count(m)).toBe(0)
      })

      it('a command that ignores SIGTERM is killed with SIGKILL after the grace period', async () => {
        const bash = await executor()
        const m = digits()
        const result = await run(bash, `trap '' TERM; sleep 1000.${q(m)}; echo not reached`, { timeoutMs: TRAP_TIMEOUT_MS })
        expect(result).toMatchObject({ timedOut: true, aborted: false, signal: 'SIGKILL', exitCode: null })
        expect(result.stdout.text).toBe('')
        // SIGKILL is only sent once the grace period is over (a lower bound, not a timing guess).
        expect(result.durationMs).toBeGreaterThanOrEqual(TRAP_TIMEOUT_MS + graceMs - 20)
        expect(await count(m)).toBe(0)
      })

      it('an AbortSignal stops the command: aborted, not timedOut', async () => {
        const bash = await executor()
        const m = digits()
        const controller = new AbortController()
        const pending = run(bash, `sleep 1000.${q(m)}`, { signal: controller.signal, timeoutMs: LONG_TIMEOUT_MS })
        await seen(m)
        controller.abort()
        const result = await pending
        expect(result).toMatchObject({ aborted: true, timedOut: false, signal: 'SIGTERM', exitCode: null, leftoverProcesses: 0 })
        expect(result.durationMs).toBeLessThan(PROMPT_MS)
        expect(await count(m)).toBe(0)
      })

      it('an already-aborted signal rejects run() and makes start() throw', async () => {
        const bash = await executor()
        const m = digits()
        const signal = AbortSignal.abort()
        await expect(run(bash, `sleep 1000.${q(m)}`, { signal })).rejects.toThrow()
        expect(() => start(bash, `sleep 1000.${q(m)}`, { signal })).toThrow()
        expect(bash.list()).toEqual([])
        expect(await count(m)).toBe(0)
      })

      it('kill -TERM $$: a signal death of its own is neither timedOut nor aborted', async () => {
        const result = await run(await executor(), 'kill -TERM $$')
        expect(result).toMatchObject({ signal: 'SIGTERM', exitCode: null, timedOut: false, aborted: false })
      })

      it('kill -9 $$ reports SIGKILL', async () => {
        const result = await run(await executor(), 'kill -9 $$')
        expect(result).toMatchObject({ signal: 'SIGKILL', exitCode: null, timedOut: false, aborted: false })
      })
    })

    describe('leftovers and escapees', () => {
      it('`sleep & echo started` returns promptly with one leftover stopped', async () => {
        const bash = await executor()
        const m = digits()
        const result = await run(bash, `sleep 1000.${q(m)} & echo started`, { timeoutMs: LONG_TIMEOUT_MS })
        expect(result).toMatchObject({ exitCode: 0, signal: null, timedOut: false, aborted: false, leftoverProcesses: 1 })
        expect(result.stdout.text).toBe('started\n')
        expect(result.durationMs).toBeLessThan(PROMPT_MS)
        expect(await count(m)).toBe(0)
      })

      it('a leftover that holds the pipes does not hold the call', async () => {
        const bash = await executor()
        const m = digits()
        const result = await run(bash, `sleep 1000.${q(m)} & (trap '' TERM; sleep 1000.${q(m)}) & echo started`, {
          timeoutMs: LONG_TIMEOUT_MS,
        })
        expect(result.timedOut).toBe(false)
        expect(result.stdout.text).toBe('started\n')
        expect(result.leftoverProcesses).toBeGreaterThanOrEqual(2)
        expect(result.durationMs).toBeLessThan(PROMPT_MS)
        expect(await count(m)).toBe(0)
      })

      itEscapees('`setsid sleep &` and a double fork leave no survivor after the call', async () => {
        const bash = await executor()
        const m = digits()
        const result = await run(bash, `setsid sleep 1000.${q(m)} & (setsid sh -c 'sleep 1000.${q(m)} &' &) ; nohup sleep 1000.${q(m)} >/dev/null 2>&1 & echo started`, {
          timeoutMs: LONG_TIMEOUT_MS,
        })
        expect(result.stdout.text).toBe('started\n')
        expect(result.timedOut).toBe(false)
        expect(result.leftoverProcesses).toBeGreaterThanOrEqual(1)
        expect(await count(m)).toBe(0)
      })

      itEscapees('`setsid sleep &` leaves no survivor after a timeout', async () => {
        const bash = await executor()
        const m = digits()
        const result = await run(bash, `setsid sleep 1000.${q(m)} & sleep 1000.${q(m)}`, { timeoutMs: 300 })
        expect(result.timedOut).toBe(true)
        expect(await count(m)).toBe(0)
      })

      itEscapees('`setsid sleep &` in a background task: the task runs until it is gone, and kill leaves no survivor', async () => {
        const bash = await executor()
        const m = digits()
        const task = start(bash, `setsid sleep 1000.${q(m)} & echo started`)
        let output = ''
        await vi.waitFor(() => {
          output += bash.readOutput(task.id).delta
          expect(output).toBe('started\n')
        }, WAIT)
        await seen(m)
        // The shell has exited, but a process of the task is left: the task is still running.
        expect(bash.get(task.id)!.status).toBe('running')
        expect(await bash.kill(task.id)).toBe(true)
        expect(task.status).toBe('killed')
        expect(await count(m)).toBe(0)
      })

      itEscapees('`setsid sleep &` leaves no survivor after disposal', async () => {
        const instance = await create()
        const m = digits()
        const task = start(instance.executor, `setsid sleep 1000.${q(m)} & echo started`)
        await seen(m)
        await instance.dispose()
        expect(await count(m)).toBe(0)
        expect((await task.done).status).toBe('killed')
      })
    })

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

      it('a read shows new stderr in a [stderr] section after stdout', async () => {
        const bash = await executor()
        const both = start(bash, 'echo out; echo err >&2')
        const noNewline = start(bash, 'printf out; printf err >&2')
        const onlyErr = start(bash, 'echo err >&2')
        const nothing = start(bash, 'true')
        await Promise.all([both.done, noNewline.done, onlyErr.done, nothing.done])
        expect(bash.readOutput(both.id)).toMatchObject({ delta: 'out\n[stderr]\nerr\n', lossy: false, spillPaths: {} })
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

    describe('onTaskDone', () => {
      it('fires exactly once per task, completed or killed', async () => {
        const bash = await executor()
        const seenIds: string[] = []
        bash.onTaskDone((task) => seenIds.push(`${task.id}:${task.status}`))
        const m = digits()
        const a = start(bash, 'true')
        const b = start(bash, 'exit 3')
        const c = start(bash, `sleep 1000.${q(m)}`)
        await Promise.all([a.done, b.done])
        await seen(m)
        await bash.kill(c.id)
        await bash.kill(c.id)
        await bash.kill(a.id)
        bash.readOutput(a.id)
        // A later task's notice is a barrier: anything duplicated would have arrived by now.
        const barrier = new Promise<void>((resolve) => bash.onTaskDone((task) => task.id === 'bash-4' && resolve()))
        start(bash, 'true')
        await barrier
        expect(seenIds.sort()).toEqual(['bash-1:completed', 'bash-2:completed', 'bash-3:killed', 'bash-4:completed'])
      })

      it('many tasks ending at once: each notice arrives exactly once', async () => {
        const bash = await executor()
        const seenIds: string[] = []
        bash.onTaskDone((task) => seenIds.push(task.id))
        const tasks = Array.from({ length: 20 }, (_, i) => start(bash, i % 2 ? 'true' : 'exit 1'))
        await Promise.all(tasks.map((task) => task.done))
        await vi.waitFor(() => expect(seenIds).toHaveLength(20), WAIT)
        expect(new Set(seenIds).size).toBe(20)
        expect([...seenIds].sort()).toEqual(tasks.map((task) => task.id).sort())
      })

      it('the listener sees the ended task; the returned function unregisters it', async () => {
        const bash = await executor()
        const first: BashTask[] = []
        const off = bash.onTaskDone((task) => first.push(task))
        const all: string[] = []
        bash.onTaskDone((task) => all.push(task.id))
        const task = start(bash, 'echo x')
        await vi.waitFor(() => expect(first).toHaveLength(1), WAIT)
        expect(first[0]).toBe(task)
        expect(first[0].status).toBe('completed')
        expect(first[0].endedAt).toEqual(expect.any(Number))
        off()
        await start(bash, 'true').done
        await vi.waitFor(() => expect(all).toEqual(['bash-1', 'bash-2']), WAIT)
        expect(first).toHaveLength(1)
      })

      it('a throwing listener harms no other listener', async () => {
        const bash = await executor()
        const logged = vi.spyOn(console, 'error').mockImplementation(() => {})
        try {
          bash.onTaskDone(() => {
            throw new Error('listener failure (expected by the test)')
          })
          bash.onTaskDone(async () => {
            throw new Error('async listener failure (expected by the test)')
          })
          const got: string[] = []
          bash.onTaskDone((task) => got.push(task.id))
          const task = start(bash, 'true')
          await task.done
          await vi.waitFor(() => expect(got).toEqual([task.id]), WAIT)
          const second = start(bash, 'true')
          await vi.waitFor(() => expect(got).toEqual([task.id, second.id]), WAIT)
        } finally {
          logged.mockRestore()
        }
      })

      it('a listener registered by a plugin is gone after that plugin unloads', async () => {
        const { ctx, executor: bash } = await create()
        const fromPlugin: string[] = []
        const fromRoot: string[] = []
        const fork = ctx.plugin({
          name: 'conformance-listener',
          inject: ['bash'],
          apply(pluginCtx: Context) {
            pluginCtx.bash.onTaskDone((task) => fromPlugin.push(task.id))
          },
        })
        bash.onTaskDone((task) => fromRoot.push(task.id))
        const first = start(bash, 'true')
        await vi.waitFor(() => expect(fromRoot).toEqual([first.id]), WAIT)
        expect(fromPlugin).toEqual([first.id])
        fork.dispose()
        const second = start(bash, 'true')
        await vi.waitFor(() => expect(fromRoot).toEqual([first.id, second.id]), WAIT)
        expect(fromPlugin).toEqual([first.id])
      })

      it('no listener fires for tasks killed by disposal', async () => {
        const instance = await create()
        const bash = instance.executor
        const calls: string[] = []
        bash.onTaskDone((task) => calls.push(task.id))
        const [m1, m2] = [digits(), digits()]
        const a = start(bash, `sleep 1000.${q(m1)}`)
        const b = start(bash, `trap '' TERM; sleep 1000.${q(m2)}; true`)
        await seen(m1)
        await seen(m2)
        await instance.dispose()
        await Promise.all([a.done, b.done])
        expect(a.status).toBe('killed')
        expect(b.status).toBe('killed')
        await delay(50)
        expect(calls).toEqual([])
        expect(await count(m1)).toBe(0)
        expect(await count(m2)).toBe(0)
      })
    })

    describe('yield to the background (spec.yieldAfterMs)', () => {
      it('rejects a yield time that is not a positive number', async () => {
        const bash = await executor()
        for (const yieldAfterMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
          expect(() => bash.resolve({ command: 'true', yieldAfterMs }), String(yieldAfterMs)).toThrow(/^invalid yieldAfterMs: expected a positive number/)
        }
        expect(bash.resolve({ command: 'true', yieldAfterMs: 500 }).yieldAfterMs).toBe(500)
        expect(Object.keys(bash.resolve({ command: 'true' }))).not.toContain('yieldAfterMs')
      })

      it('a command that ends before the yield time is an ordinary result and no task', async () => {
        const bash = await executor()
        const result = await run(bash, 'echo hi; exit 3', { yieldAfterMs: LONG_TIMEOUT_MS / 2, timeoutMs: LONG_TIMEOUT_MS })
        expect(result).toMatchObject({ exitCode: 3, timedOut: false })
        expect(result.stdout.text).toBe('hi\n')
        expect(result.yieldedTo).toBeUndefined()
        expect(bash.list()).toEqual([])
      })

      it('returns the output so far and goes on as a task of the same owner; reads continue without repeat or gap', async () => {
        const bash = await executor()
        const done: string[] = []
        bash.onTaskDone((task) => done.push(`${task.id}:${task.status}`))
        // No gate file: a read-only sandbox could not create one. The sleep only has to outlast the yield time.
        const command = `for i in $(seq 1 200); do echo "early $i"; done; sleep 2; seq 1 300 | sed 's/^/late /'`
        const result = await run(bash, command, { yieldAfterMs: 300, owner: 'session-y', timeoutMs: LONG_TIMEOUT_MS })
        expect(result.yieldedTo).toBe('bash-1')
        expect(result).toMatchObject({ exitCode: null, signal: null, timedOut: false, aborted: false, leftoverProcesses: 0 })
        expect(result.stdout.truncated).toBe(false)
        const task = bash.get('bash-1')!
        expect(task.status).toBe('running')
        expect(task.command).toBe(command)
        expect(bash.ownerOf('bash-1')).toBe('session-y')
        expect(task.startedAt).toBeLessThanOrEqual(Date.now() - 300)
        let text = result.stdout.text
        text += bash.readOutput('bash-1').delta
        expect(await task.done).toBe(task)
        expect(task).toMatchObject({ status: 'completed', exitCode: 0, signal: null })
        const last = bash.readOutput('bash-1')
        expect(last.lossy).toBe(false)
        text += last.delta
        let expected = ''
        for (let i = 1; i <= 200; i++) expected += `early ${i}\n`
        for (let i = 1; i <= 300; i++) expected += `late ${i}\n`
        expect(text).toBe(expected)
        await vi.waitFor(() => expect(done).toEqual(['bash-1:completed']), WAIT)
      })

      it('its timeout still counts from its start and kills the whole task', async () => {
        const bash = await executor()
        const m = digits()
        const result = await run(bash, `sleep 1000.${q(m)} & sleep 1000.${q(m)}`, { yieldAfterMs: 200, timeoutMs: 1500 })
        expect(result.yieldedTo).toBe('bash-1')
        const task = bash.get('bash-1')!
        await task.done
        expect(task.status).toBe('killed')
        expect(task.reason).toBe('timed out after 1500ms')
        expect(await count(m)).toBe(0)
      })

      it('kill stops it (not the timeout), an abort after the yield does not, and disposal kills it silently', async () => {
        const instance = await create()
        const bash = instance.executor
        const done: string[] = []
        bash.onTaskDone((task) => done.push(`${task.id}:${task.status}`))
        const [m1, m2] = [digits(), digits()]
        const controller = new AbortController()
        const first = await run(bash, `sleep 1000.${q(m1)} & sleep 1000.${q(m1)}`, { yieldAfterMs: 200, timeoutMs: LONG_TIMEOUT_MS, signal: controller.signal })
        expect(first.yieldedTo).toBe('bash-1')
        controller.abort()
        await seen(m1)
        expect(bash.get('bash-1')!.status).toBe('running')
        expect(await bash.kill('bash-1')).toBe(true)
        expect(bash.get('bash-1')).toMatchObject({ status: 'killed' })
        expect(bash.get('bash-1')!.reason).toBeUndefined()
        expect(await count(m1)).toBe(0)
        await vi.waitFor(() => expect(done).toEqual(['bash-1:killed']), WAIT)
        const second = await run(bash, `sleep 1000.${q(m2)}`, { yieldAfterMs: 200, timeoutMs: LONG_TIMEOUT_MS })
        expect(second.yieldedTo).toBe('bash-2')
        await seen(m2)
        await instance.dispose()
        expect(bash.get('bash-2')?.status ?? 'killed').toBe('killed')
        expect(await count(m2)).toBe(0)
        expect(done).toEqual(['bash-1:killed'])
      })
    })

    describe('disposal', () => {
      it('kills every task and foreground command and waits until no process is left', async () => {
        const instance = await create()
        const bash = instance.executor
        const m = [digits(), digits(), digits(), digits(), digits()]
        const tasks = [
          start(bash, `sleep 1000.${q(m[0])}`),
          start(bash, `sleep 1000.${q(m[1])} & sleep 1000.${q(m[2])} & wait`),
          start(bash, `trap '' TERM; sleep 1000.${q(m[3])}; true`),
        ]
        const foreground = run(bash, `sleep 1000.${q(m[4])}`, { timeoutMs: LONG_TIMEOUT_MS })
        const settled = foreground.then(
          (result: BashRunResult) => ({ result }),
          (error: unknown) => ({ error }),
        )
        for (const marker of m) await seen(marker)
        await instance.dispose()
        for (const marker of m) expect(await count(marker)).toBe(0)
        for (const task of tasks) expect(task.status).toBe('killed')
        // The foreground call ends well before its timeout, rejected: its command did not end by itself.
        const outcome = await settled
        expect(outcome).toEqual({ error: expect.any(Error) })
        expect((outcome as { error: Error }).error.message).toMatch(/disposed/)
        expect((outcome as { error: Error }).error).toMatchObject({ code: 'DSH_EXECUTOR_DISPOSED' })
      })

      it('is idempotent, and the executor refuses new work afterwards', async () => {
        const instance = await create()
        const bash = instance.executor
        const spec: BashExecSpec = bash.resolve({ command: 'true', workdir })
        await instance.dispose()
        await instance.dispose()
        await expect(bash.run(spec)).rejects.toThrow()
        expect(() => bash.start(spec)).toThrow()
      })
    })
  })
}

/** What the server child process reports (see `runServerProcess`). */
interface ServerReport {
  serverFds: string[]
  foreground: string
  background: string
  write: string
}

/**
 * Starts `node` through a shell that opens fd 200 (append, no close-on-exec) on `log`, with a pipe
 * as fd 3 as well, loads the executor there, runs `ls /proc/self/fd` in the foreground and in the
 * background and tries to write to fd 200 from a command; prints a JSON report.
 */
async function runServerProcess(server: ServerProcessOptions, log: string, workdir: string): Promise<ServerReport> {
  const modulePath = server.module.startsWith('file:') ? fileURLToPath(server.module) : server.module
  const code = `
    import { readdirSync } from 'node:fs'
    import { Context } from 'cordis'
    const mod = await import(${JSON.stringify(modulePath)})
    const ctx = new Context()
    ctx.plugin(mod[${JSON.stringify(server.exportName)}], ${JSON.stringify(server.config)})
    const bash = ctx.get('bash')
    if (!bash) throw new Error('the executor did not load')
    const workdir = ${JSON.stringify(workdir)}
    const report = { serverFds: readdirSync('/proc/self/fd') }
    report.foreground = (await bash.run(bash.resolve({ command: 'ls /proc/self/fd', workdir }))).stdout.text
    const task = bash.start(bash.resolve({ command: 'ls /proc/self/fd', workdir }))
    await task.done
    report.background = bash.readOutput(task.id).delta
    const write = await bash.run(bash.resolve({ command: '{ echo leaked >&200; } 2>/dev/null && echo open || echo closed', workdir }))
    report.write = write.stdout.text
    await bash.shutdown()
    process.stdout.write(JSON.stringify(report))
  `
  const child = spawn('bash', ['--noprofile', '--norc', '-c', 'exec 200>>"$1"; exec "$2" --input-type=module -e "$3"', 'dsh-bash-conformance', log, process.execPath, code], {
    cwd: server.cwd ?? dirname(modulePath),
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')))
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')))
  const exitCode = await new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)))
  if (exitCode !== 0) throw new Error(`the server process failed (exit ${exitCode}): ${err.trim()}`)
  return JSON.parse(out) as ServerReport
}
