import { DEFAULT_SECRET_PATTERNS, recordLogs } from '@deepseek-ai/dsh-bash'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { Context } from 'cordis'
import type { BashTask } from '@deepseek-ai/dsh-bash'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { splitMarker as q, trackInstances, uniqueMarker as digits, WAIT } from '@deepseek-ai/dsh-bash/conformance'
import { ownCgroupDirectory, removeStaleCgroups } from '../src/cgroup.js'
import { LocalExecutor, pidsWithCmdline } from '../src/index.js'
import { type LocalInstance, cgroupAvailable, createLocal, scratchDir } from './helpers.js'
import type { LocalExecutorConfigInput } from '../src/index.js'

const dir = scratchDir()
afterAll(() => dir.remove())
const HAS_CGROUP = cgroupAvailable()

const instances = trackInstances<LocalInstance>()

async function local(config: LocalExecutorConfigInput = {}): Promise<LocalInstance> {
  return instances.track(await createLocal(config))
}

async function executor(config: LocalExecutorConfigInput = {}): Promise<LocalExecutor> {
  return (await local(config)).executor
}

const run = (bash: LocalExecutor, command: string, extra: Record<string, unknown> = {}) =>
  bash.run(bash.resolve({ command, workdir: dir.path, ...extra }))
const start = (bash: LocalExecutor, command: string, extra: Record<string, unknown> = {}) =>
  bash.start(bash.resolve({ command, workdir: dir.path, ...extra }))


function numbered(from: number, to: number): string {
  let text = ''
  for (let i = from; i <= to; i++) text += `${i}\n`
  return text
}

const mode = (path: string) => statSync(path).mode & 0o777

/** Shell code that waits until the last background job has exec'd its `sleep 1000.…` (same pid through env and setsid). */
const untilExec = 'until tr "\\0" " " < /proc/$!/cmdline | grep -q "^sleep 1000"; do sleep 0.01; done'

describe('local executor: containment', () => {
  it.runIf(HAS_CGROUP)('uses a cgroup when one can be created, and removes its cgroups on disposal', async () => {
    const instance = await local()
    expect(instance.executor.containment).toBe('cgroup')
    expect(instance.executor.containmentNote).toBe('')
    const m = digits()
    await run(instance.executor, `sleep 1000.${q(m)} & echo started`)
    await instance.dispose()
    const mine = readdirSync('/sys/fs/cgroup/unified').filter((name) => name.startsWith(`dsh-bash-${process.pid}-`))
    expect(mine).toEqual([])
  })

  it.runIf(HAS_CGROUP)('empty cgroups left by a dead executor process are removed; populated ones are left alone', async () => {
    const own = ownCgroupDirectory()!
    const deadPid = spawnSync('true').pid!
    const stale = join(own, `dsh-bash-${deadPid}-stale1`)
    const busy = join(own, `dsh-bash-${deadPid}-busy01`)
    const young = join(own, `dsh-bash-${deadPid}-young1`)
    for (const path of [stale, join(stale, 'run-1-1'), join(stale, 'bash-2-2'), busy, join(busy, 'run-1-1'), young]) mkdirSync(path)
    const m = digits()
    const sleeper = spawn('sh', ['-c', `echo 0 > ${join(busy, 'run-1-1')}/cgroup.procs && exec sleep 1000.${m}`], { stdio: 'ignore' })
    try {
      await vi.waitFor(() => expect(readFileSync(join(busy, 'run-1-1', 'cgroup.procs'), 'utf8').trim()).toBe(String(sleeper.pid)), WAIT)
      const old = new Date(Date.now() - 120_000)
      for (const path of [stale, busy]) utimesSync(path, old, old)
      removeStaleCgroups(own)
      expect(existsSync(stale)).toBe(false)
      expect(existsSync(join(busy, 'run-1-1'))).toBe(true)
      expect(existsSync(young)).toBe(true)
    } finally {
      sleeper.kill('SIGKILL')
      await vi.waitFor(() => expect(pidsWithCmdline(`1000.${m}`)).toEqual([]), WAIT)
      await vi.waitFor(() => {
        for (const path of [join(busy, 'run-1-1'), busy, young]) if (existsSync(path)) rmdirSync(path)
        expect(existsSync(busy)).toBe(false)
      }, WAIT)
    }
  })

  it('marker and pgroup can be chosen explicitly', async () => {
    expect((await executor({ containment: 'marker' })).containment).toBe('marker')
    expect((await executor({ containment: 'pgroup' })).containment).toBe('pgroup')
  })

  for (const containment of ['cgroup', 'marker', 'pgroup'] as const) {
    it.runIf(containment !== 'cgroup' || HAS_CGROUP)(`${containment}: a timeout sends the main process one SIGTERM, not two`, async () => {
      const bash = await executor({ containment })
      const m = digits()
      // The handler runs a command, so a second SIGTERM arriving meanwhile would run it again.
      const result = await run(bash, `n=0; trap 'n=$((n+1)); echo "trapped $n"; sleep 0.4; exit 0' TERM; sleep 1000.${q(m)} & wait`, { timeoutMs: 600 })
      expect(result.timedOut).toBe(true)
      expect(result.stdout.text).toBe('trapped 1\n')
    })
  }

  it('marker: two executors in one process never see each other\'s processes', async () => {
    const a = await executor({ containment: 'marker' })
    const b = await executor({ containment: 'marker' })
    const m = digits()
    const long = start(a, `sleep 1000.${q(m)}`)
    const short = start(b, 'true')
    expect(long.id).toBe(short.id)
    await short.done
    expect(short.status).toBe('completed')
    expect(long.status).toBe('running')
    expect(await a.kill(long.id)).toBe(true)
  })

  it('known limit of the marker: a process that clears its environment and leaves the group escapes', async () => {
    const bash = await executor({ containment: 'marker' })
    const m = digits()
    try {
      const result = await run(bash, `env -i setsid sleep 1000.${q(m)} >/dev/null 2>&1 & ${untilExec}; echo started`)
      expect(result.stdout.text).toBe('started\n')
      expect(pidsWithCmdline(`1000.${m}`)).toHaveLength(1)
    } finally {
      for (const pid of pidsWithCmdline(`1000.${m}`)) process.kill(pid, 'SIGKILL')
    }
  })

  it('known limit of pgroup: a setsid escapee is not followed', async () => {
    const bash = await executor({ containment: 'pgroup' })
    const m = digits()
    try {
      const result = await run(bash, `setsid sleep 1000.${q(m)} >/dev/null 2>&1 & ${untilExec}; echo started`)
      expect(result.leftoverProcesses).toBe(0)
      expect(pidsWithCmdline(`1000.${m}`)).toHaveLength(1)
    } finally {
      for (const pid of pidsWithCmdline(`1000.${m}`)) process.kill(pid, 'SIGKILL')
    }
  })

  it.runIf(HAS_CGROUP)('a trusted BASH_ENV or control variable does not switch containment off', async () => {
    const bash = await executor()
    const m = digits()
    const rc = join(dir.path, `bash-env-${m}.sh`)
    writeFileSync(rc, 'FROM_BASH_ENV=yes\n')
    const result = await run(bash, `sleep 1000.${q(m)} & echo "$FROM_BASH_ENV $BASH_ENV"; bash -c 'echo "child $FROM_BASH_ENV"'`, {
      env: { BASH_ENV: rc, DSH_BASH_CGROUP: '/nonexistent', DSH_BASH_TASK: 'x' },
    })
    // The caller's BASH_ENV is honoured (after the cgroup is joined), in the command and its children.
    expect(result.stdout.text).toBe(`yes ${rc}\nchild yes\n`)
    expect(result.exitCode).toBe(0)
    expect(result.leftoverProcesses).toBe(1)
    expect(pidsWithCmdline(`1000.${m}`)).toEqual([])
  })
})

describe('local executor: output', () => {
  // Real work that grows with load: 100 MB through a pipe took 28–63 s beside four busy loops at a
  // load average of 16–33 (the default 60 s limit failed it once), a few seconds at rest.
  it('100 MB of output keeps memory bounded', { timeout: 300_000 }, async () => {
    const bash = await executor()
    const before = process.memoryUsage().rss
    let peak = before
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss)
    }, 20)
    let result
    try {
      result = await run(bash, 'yes 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ | head -c 100000000; echo done >&2')
    } finally {
      clearInterval(sampler)
    }
    peak = Math.max(peak, process.memoryUsage().rss)
    const growthMb = (peak - before) / 1e6
    console.log(`[bash-local] 100 MB of output: peak RSS growth ${growthMb.toFixed(1)} MB (RSS before ${(before / 1e6).toFixed(1)} MB)`)
    expect(result.stdout.totalBytes).toBe(100_000_000)
    expect(result.stdout.truncated).toBe(true)
    expect(result.stdout.text.length).toBeLessThanOrEqual(64_000)
    // Over the 64 MiB spill cap: no spill file.
    expect(result.stdout.spillPath).toBeUndefined()
    expect(result.stderr.text).toBe('done\n')
    expect(growthMb).toBeLessThan(150)
  })

  it('a character split across chunks arrives intact in results and background reads', async () => {
    const bash = await executor()
    const result = await run(bash, "printf '\\xe2'; sleep 0.05; printf '\\x82\\xac'")
    expect(result.stdout.text).toBe('€')
    const m = digits()
    const gate = join(dir.path, `gate-${m}`)
    const task = start(bash, `printf 'a\\xe2'; while [ ! -e ${gate} ]; do sleep 0.01; done; printf '\\x82\\xacb'`)
    await vi.waitFor(() => expect(bash.readOutput(task.id).delta).toBe('a'), WAIT)
    expect(bash.readOutput(task.id).delta).toBe('')
    writeFileSync(gate, '')
    await task.done
    expect(bash.readOutput(task.id).delta).toBe('€b')
  })

  it('NUL bytes never reach the text and invalid bytes become U+FFFD', async () => {
    const bash = await executor()
    const result = await run(bash, "printf 'a\\0b\\xffc\\xc3'; printf 'x\\0' >&2")
    expect(result.stdout.text).toBe('a\uFFFDb\uFFFDc\uFFFD')
    expect(result.stderr.text).toBe('x\uFFFD')
    expect(result.stdout.totalBytes).toBe(6)
    const task = start(bash, "printf 'n\\0\\xfe'")
    await task.done
    expect(bash.readOutput(task.id).delta).toBe('n\uFFFD\uFFFD')
  })

  it('a lossy background read says so, and the spill file holds the whole stream', async () => {
    const bash = await executor({ maxOutputBytes: 998 })
    const m = digits()
    const gate = join(dir.path, `gate-${m}`)
    const task = start(bash, `echo first; while [ ! -e ${gate} ]; do sleep 0.01; done; seq 1 5000; echo tail >&2`)
    await vi.waitFor(() => expect(bash.readOutput(task.id).delta).toBe('first\n'), WAIT)
    writeFileSync(gate, '')
    await task.done
    const read = bash.readOutput(task.id)
    expect(read.lossy).toBe(true)
    const whole = `first\n${numbered(1, 5000)}`
    // The kept tail (≤ 998 bytes: the cut falls 2 bytes into a line) of what came after the first read; stderr was not lost.
    const [out, err] = read.delta.split('[stderr]\n')
    expect(whole.endsWith(out)).toBe(true)
    expect(Buffer.byteLength(out)).toBeLessThanOrEqual(998)
    // It starts with a whole line, never with the rest of one cut in front.
    expect(whole.at(-out.length - 1)).toBe('\n')
    expect(err).toBe('tail\n')
    expect(read.spillPaths.stdout).toEqual(expect.any(String))
    expect(read.spillPaths.stderr).toBeUndefined()
    expect(readFileSync(read.spillPaths.stdout!, 'utf8')).toBe(whole)
    expect(bash.readOutput(task.id)).toMatchObject({ delta: '', lossy: false })
  })

  it('the spill directory is 0700 and spill files are 0600', async () => {
    const bash = await executor({ maxOutputBytes: 100 })
    const result = await run(bash, 'seq 1 1000; seq 1 1000 >&2')
    const path = result.stdout.spillPath!
    expect(path).toMatch(/\/dsh-bash-[^/]+\/unowned\/dsh-bash-run-\d+-stdout\.log$/)
    expect(mode(dirname(path))).toBe(0o700)
    expect(mode(dirname(dirname(path)))).toBe(0o700)
    expect(mode(path)).toBe(0o600)
    expect(mode(result.stderr.spillPath!)).toBe(0o600)
    expect(readFileSync(path, 'utf8')).toBe(numbered(1, 1000))
  })

  it('each owner has its own 0700 spill directory; long scripts go there too', async () => {
    const bash = await executor({ maxOutputBytes: 100 })
    const a = await run(bash, 'seq 1 1000', { owner: 'session-a' })
    const b = await run(bash, 'seq 1 1000', { owner: 'session/../b' })
    const task = start(bash, 'seq 1 1000', { owner: 'session-a' })
    await task.done
    const aDir = dirname(a.stdout.spillPath!)
    expect(aDir).toBe(bash.ownerSpillDir('session-a'))
    expect(aDir).toMatch(/\/owner-[0-9a-f]{32}$/)
    expect(dirname(bash.readOutput(task.id).spillPaths.stdout!)).toBe(aDir)
    // Any token is a safe name: hashed, never a path of its own.
    const bDir = dirname(b.stdout.spillPath!)
    expect(bDir).toBe(bash.ownerSpillDir('session/../b'))
    expect(dirname(bDir)).toBe(dirname(aDir))
    expect(bDir).not.toBe(aDir)
    expect(mode(aDir)).toBe(0o700)
    expect(mode(bDir)).toBe(0o700)
    expect(bash.ownerSpillDir(undefined)).toBe(join(dirname(aDir), 'unowned'))
    const filler = 'x'.repeat(200 * 1024)
    const long = await run(bash, `X='${filler}'; echo "$0"`, { owner: 'session-a' })
    expect(dirname(long.stdout.text.trim())).toBe(aDir)
  })

  it('a file planted at the next spill path is neither followed nor overwritten', async () => {
    const bash = await executor({ maxOutputBytes: 100 })
    const first = await run(bash, 'seq 1 1000')
    const next = first.stdout.spillPath!.replace(/run-(\d+)-stdout/, (_, n: string) => `run-${Number(n) + 1}-stdout`)
    writeFileSync(next, 'planted')
    const second = await run(bash, 'seq 1 1000')
    expect(second.stdout.truncated).toBe(true)
    expect(second.stdout.spillPath).toBeUndefined()
    expect(readFileSync(next, 'utf8')).toBe('planted')
  })

  it('a stream over maxSpillBytes keeps no spill file', async () => {
    const bash = await executor({ maxOutputBytes: 100, maxSpillBytes: 1000 })
    const result = await run(bash, 'seq 1 1000')
    expect(result.stdout).toMatchObject({ truncated: true, totalBytes: Buffer.byteLength(numbered(1, 1000)) })
    expect(result.stdout.spillPath).toBeUndefined()
    const small = await run(bash, 'seq 1 200')
    expect(small.stdout.spillPath).toEqual(expect.any(String))
    expect(readdirSync(dirname(small.stdout.spillPath!)).filter((name) => name.endsWith('.log'))).toEqual([
      'dsh-bash-run-2-stdout.log',
    ])
  })

  it('spill files are deleted when their task is evicted', async () => {
    const bash = await executor({ maxOutputBytes: 100, maxFinishedTasks: 2 })
    const paths: string[] = []
    for (let i = 0; i < 4; i++) {
      const task = start(bash, 'seq 1 1000')
      await task.done
      paths.push(bash.readOutput(task.id).spillPaths.stdout!)
    }
    expect(paths.every((path) => typeof path === 'string')).toBe(true)
    expect(paths.map((path) => existsSync(path))).toEqual([false, false, true, true])
    expect(bash.list().map((task) => task.id)).toEqual(['bash-3', 'bash-4'])
    // Foreground spill files are kept for the same number of calls.
    const runs: string[] = []
    for (let i = 0; i < 3; i++) runs.push((await run(bash, 'seq 1 1000')).stdout.spillPath!)
    expect(runs.map((path) => existsSync(path))).toEqual([false, true, true])
  })

  it('spill files and the directory are deleted on disposal unless keepSpillFiles', async () => {
    const instance = await local({ maxOutputBytes: 100 })
    const task = start(instance.executor, 'seq 1 1000')
    await task.done
    const taskSpill = instance.executor.readOutput(task.id).spillPaths.stdout!
    const runSpill = (await run(instance.executor, 'seq 1 1000')).stdout.spillPath!
    expect(existsSync(taskSpill) && existsSync(runSpill)).toBe(true)
    await instance.dispose()
    expect(existsSync(taskSpill)).toBe(false)
    expect(existsSync(runSpill)).toBe(false)
    expect(existsSync(dirname(runSpill))).toBe(false)

    const keeping = await local({ maxOutputBytes: 100, keepSpillFiles: true, spillDir: dir.path })
    const kept = (await run(keeping.executor, 'seq 1 1000')).stdout.spillPath!
    await keeping.dispose()
    expect(readFileSync(kept, 'utf8')).toBe(numbered(1, 1000))
  })
})

describe('local executor: commands and environment', () => {
  it('a command of 200 KiB runs (through a private file); one over maxCommandBytes is refused', async () => {
    const bash = await executor()
    const filler = 'x'.repeat(200 * 1024)
    const result = await run(bash, `X='${filler}'; echo "\${#X}"; echo "$0" >&2`)
    expect(result.exitCode).toBe(0)
    expect(result.stdout.text).toBe(`${200 * 1024}\n`)
    // The documented difference: $0 is the private script file, not the shell.
    expect(result.stderr.text).toMatch(/\/dsh-bash-run-\d+-script\.sh\n$/)
    expect((await run(bash, 'echo "$0"')).stdout.text).toMatch(/(^|\/)bash\n$/)
    // The script file is gone once the command is over.
    expect(existsSync(result.stderr.text.trim())).toBe(false)

    const task = start(bash, `Y='${filler}'; echo "\${#Y}"`)
    await task.done
    expect(bash.readOutput(task.id).delta).toBe(`${200 * 1024}\n`)

    const tooLong = `: '${'y'.repeat(1024 * 1024)}'`
    await expect(run(bash, tooLong)).rejects.toThrow(/^command is too long: 1048580 bytes \(the limit is 1048576 bytes\)$/)
    expect(() => start(bash, tooLong)).toThrow(/^command is too long: /)
    // Exactly the limit is accepted.
    const exact = `: '${'w'.repeat(1024 * 1024 - 5)}'`
    expect(Buffer.byteLength(exact)).toBe(1024 * 1024 - 1)
    expect((await run(bash, `${exact};`)).exitCode).toBe(0)
    const strict = await executor({ maxCommandBytes: 100 })
    await expect(run(strict, `echo ${'z'.repeat(100)}`)).rejects.toThrow('command is too long: 105 bytes (the limit is 100 bytes)')
  })

  it('non-interactive variables are set, secret-looking ones removed, and a trusted env wins', async () => {
    const saved = { ...process.env }
    Object.assign(process.env, {
      MY_API_KEY: 'k',
      GITHUB_TOKEN: 't',
      DB_PASSWORD: 'p',
      aws_secret_access_key: 's',
      DSH_HARMLESS: 'h',
      MONKEY: 'm',
      TOKENIZERS_PARALLELISM: 'false',
      KEYBOARD_LAYOUT: 'us',
      TERM: 'xterm-256color',
    })
    try {
      const bash = await executor()
      const result = await run(bash, 'env | sort')
      const env = Object.fromEntries(
        result.stdout.text
          .trim()
          .split('\n')
          .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
      )
      expect(env).toMatchObject({
        NO_COLOR: '1',
        TERM: 'dumb',
        PAGER: 'cat',
        GIT_PAGER: 'cat',
        GIT_TERMINAL_PROMPT: '0',
        GIT_EDITOR: 'true',
        DEBIAN_FRONTEND: 'noninteractive',
        DSH_HARMLESS: 'h',
        // Whole name parts only: a name that merely contains KEY or TOKEN stays.
        MONKEY: 'm',
        TOKENIZERS_PARALLELISM: 'false',
        KEYBOARD_LAYOUT: 'us',
        PATH: process.env.PATH,
      })
      for (const name of ['MY_API_KEY', 'GITHUB_TOKEN', 'DB_PASSWORD', 'aws_secret_access_key', 'BASH_ENV', 'DSH_BASH_CGROUP', 'DSH_BASH_ENV_NEXT']) {
        expect(env, name).not.toHaveProperty(name)
      }
      const trusted = await run(bash, 'printf "%s %s %s" "$TERM" "$MY_API_KEY" "$NO_COLOR"', {
        env: { TERM: 'vt100', MY_API_KEY: 'given', NO_COLOR: '' },
      })
      expect(trusted.stdout.text).toBe('vt100 given ')
      const custom = await executor({ secretEnvPatterns: ['*HARMLESS'] })
      expect((await run(custom, 'printf "%s|%s" "${DSH_HARMLESS-gone}" "$MY_API_KEY"')).stdout.text).toBe('gone|k')
      // A glob matches the whole name: HARMLESS alone would not reach DSH_HARMLESS.
      const whole = await executor({ secretEnvPatterns: ['HARMLESS'] })
      expect((await run(whole, 'printf "%s" "${DSH_HARMLESS-gone}"')).stdout.text).toBe('h')
      // `!NAME` (the CLI's --keep-env) keeps one variable the list would remove.
      const keep = await executor({ secretEnvPatterns: [...DEFAULT_SECRET_PATTERNS, '!GITHUB_TOKEN'] })
      expect((await run(keep, 'printf "%s|%s" "${GITHUB_TOKEN-gone}" "${MY_API_KEY-gone}"')).stdout.text).toBe('t|gone')
    } finally {
      for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name]
      Object.assign(process.env, saved)
    }
  })

  it('a prompt on /dev/tty fails at once instead of hanging', async () => {
    const bash = await executor()
    const result = await run(bash, 'read x < /dev/tty; echo "status $?"', { timeoutMs: 60_000 })
    expect(result.timedOut).toBe(false)
    expect(result.stdout.text).toMatch(/^status [1-9]\d*\n$/)
    expect(result.stderr.text).toMatch(/\/dev\/tty/)
    expect(result.durationMs).toBeLessThan(30_000)
    // The same for a tool that opens the terminal itself.
    const ssh = await run(bash, 'exec 3</dev/tty && echo opened || echo "no terminal"', { timeoutMs: 60_000 })
    expect(ssh.stdout.text).toBe('no terminal\n')
  })

  it('a large stdin is delivered, and a command that does not read it is not harmed', async () => {
    const bash = await executor()
    const big = Buffer.alloc(2 * 1024 * 1024, 'a')
    expect((await run(bash, 'wc -c', { stdin: big })).stdout.text.trim()).toBe(String(big.length))
    expect((await run(bash, 'echo ignored', { stdin: big })).stdout.text).toBe('ignored\n')
  })
})

describe('local executor: config', () => {
  const make = (config: unknown) => () => new LocalExecutor(new Context(), config as LocalExecutorConfigInput)

  it('bad values are errors that name the key', () => {
    expect(make({ timeoutMs: -1 })).toThrow('invalid local executor config: timeoutMs must be positive')
    expect(make({ timeoutMs: 1.5 })).toThrow('timeoutMs must be an integer')
    expect(make({ timeoutMs: '10' })).toThrow('timeoutMs must be a number')
    expect(make({ nope: 1 })).toThrow('invalid local executor config: unknown key(s) "nope"')
    expect(make({ graceMs: -5 })).toThrow('graceMs must not be negative')
    expect(make({ maxOutputBytes: 0 })).toThrow('maxOutputBytes must be positive')
    expect(make({ containment: 'jail' })).toThrow('containment must be one of auto, cgroup, marker, pgroup')
    expect(make({ keepSpillFiles: 'yes' })).toThrow('keepSpillFiles must be a boolean')
    expect(make({ secretEnvPatterns: 'KEY' })).toThrow('secretEnvPatterns must be a list')
    expect(make({ secretEnvPatterns: ['A B'] })).toThrow('secretEnvPatterns entries are globs of letters, digits, _ and *, or !NAME')
    expect(make({ timeoutMs: 5000, maxTimeoutMs: 1000 })).toThrow('timeoutMs (5000) exceeds maxTimeoutMs (1000)')
    expect(make({ maxTimeoutMs: 3e9, timeoutMs: 1000 })).toThrow('maxTimeoutMs must be at most 2147483647 ms')
    expect(make({ shell: 'no-such-shell-dsh' })).toThrow('shell not found: no-such-shell-dsh')
    // Every config refusal carries the code, the kit's and the executor's own checks alike.
    for (const config of [{ timeoutMs: -1 }, { nope: 1 }, { shell: 'no-such-shell-dsh' }]) {
      expect(make(config)).toThrow(expect.objectContaining({ code: 'DSH_INVALID_CONFIG' }))
    }
  })

  it('defaults are those of the spec', async () => {
    const bash = await executor({ graceMs: undefined })
    const spec = bash.resolve({ command: 'true' })
    expect(spec.timeoutMs).toBe(120_000)
    expect(spec.workdir).toBe(process.cwd())
    expect(bash.resolve({ command: 'true', timeoutMs: 10_000_000 }).timeoutMs).toBe(600_000)
    expect(bash.sandboxMode).toBeUndefined()
  })
})

describe('local executor: races', () => {
  it('kill while a task is finishing: kill() is true exactly when the task ends killed', async () => {
    const bash = await executor()
    const outcomes: Array<{ stopped: boolean; task: BashTask }> = []
    for (let i = 0; i < 40; i++) {
      const task = start(bash, i % 2 ? 'echo x' : 'true')
      await new Promise((resolve) => setTimeout(resolve, i % 10))
      outcomes.push({ stopped: await bash.kill(task.id), task })
    }
    for (const { stopped, task } of outcomes) {
      expect(task.status).toBe(stopped ? 'killed' : 'completed')
      if (!stopped) expect(task.exitCode).toBe(0)
    }
  })

  it('disposal during reads: reads stay consistent, every task ends killed, no listener fires, no process is left', async () => {
    const instance = await local()
    const bash = instance.executor
    const m = digits()
    const fired: string[] = []
    bash.onTaskDone((task) => fired.push(task.id))
    const tasks = [0, 1, 2].map(() => start(bash, `i=0; while [ $i -lt 100000000 ]; do i=$((i+1)); echo $i; done; sleep 1000.${q(m)}`))
    const reads = tasks.map((): Array<{ delta: string; lossy: boolean }> => [])
    const seen = (i: number) => reads[i].reduce((n, read) => n + read.delta.length, 0)
    let stop = false
    const reader = (async () => {
      while (!stop) {
        tasks.forEach((task, i) => {
          const { delta, lossy } = bash.readOutput(task.id)
          if (delta !== '' || lossy) reads[i].push({ delta, lossy })
        })
        await new Promise((resolve) => setImmediate(resolve))
      }
    })()
    await vi.waitFor(() => expect(tasks.every((_, i) => seen(i) > 1000)).toBe(true), WAIT)
    await instance.dispose()
    stop = true
    await reader
    tasks.forEach((task, i) => {
      reads[i].push(bash.readOutput(task.id))
      expect(task.status).toBe('killed')
      // Each read is the exact next piece of the stream `1\n2\n3\n…`; a lossy one restarts at a
      // later line start (under load, pipe chunks of ~64 KB arrive between two reads: loss is real).
      const last = reads[i].reduce((top, read) => Math.max(top, ...read.delta.split('\n').slice(-2).map(Number)), 0)
      const stream = counting(last + 1)
      let at = 0
      for (const { delta, lossy } of reads[i]) {
        if (delta === '') continue
        if (lossy) {
          const restart = stream.indexOf(`\n${delta.slice(0, delta.indexOf('\n') + 1)}`, at - 1) + 1
          expect(restart, `a lossy read starts with a whole line after byte ${at}: ${JSON.stringify(delta.slice(0, 20))}`).toBeGreaterThan(at)
          at = restart
        }
        expect(stream.slice(at, at + delta.length) === delta, `${lossy ? 'lossy ' : ''}read at byte ${at}: ${JSON.stringify(delta.slice(0, 20))}`).toBe(true)
        at += delta.length
      }
    })
    expect(fired).toEqual([])
    expect(pidsWithCmdline(`1000.${m}`)).toEqual([])
  })
})

/** `1\n2\n3\n…\n<last>\n`: what the race test's tasks print. */
function counting(last: number): string {
  const lines: string[] = []
  for (let n = 1; n <= last; n++) lines.push(`${n}\n`)
  return lines.join('')
}

describe('local executor: pipes and descriptors', () => {
  /** The server's own open descriptors. */
  const openFds = () => readdirSync('/proc/self/fd').length

  it('stdout and stderr are FIFOs by default; outputPipes "socket" keeps Node\'s socketpairs (and their ENXIO)', async () => {
    const fifo = await executor()
    expect(fifo.outputPipes).toBe('fifo')
    expect(fifo.outputPipesNote).toBe('')
    expect((await run(fifo, 'stat -L -c %F /proc/self/fd/1 /proc/self/fd/2')).stdout.text).toBe('fifo\nfifo\n')
    const socket = await executor({ outputPipes: 'socket' })
    expect(socket.outputPipes).toBe('socket')
    expect((await run(socket, 'stat -L -c %F /proc/self/fd/1')).stdout.text).toBe('socket\n')
    const denied = await run(socket, 'echo x > /dev/stderr')
    expect(denied.exitCode).toBe(1)
    expect(denied.stderr.text).toMatch(/No such device or address/)
  })

  it('when the pool can make no pipe any more (its directory removed), commands still run, with sockets, logged once', async () => {
    const bash = await executor()
    const pipesDir = (bash as unknown as { pipePool: { dir: string } }).pipePool.dir
    rmSync(pipesDir, { recursive: true })
    const logs = recordLogs()
    try {
      const kinds: string[] = []
      // More commands than the pool holds: the last ones find it empty and mkfifo failing.
      for (let i = 0; i < 40; i++) kinds.push((await run(bash, 'stat -L -c %F /proc/self/fd/1; echo ok >&2')).stdout.text.trim())
      expect(kinds[0]).toBe('fifo')
      expect(kinds.at(-1)).toBe('socket')
      const failures = logs.lines.filter((line) => line.name === 'dsh-bash' && line.type === 'warn')
      expect(failures).toHaveLength(1)
      expect(failures[0].content).toMatch(/^real pipes failed, commands get sockets for stdout and stderr: cannot make a pipe/)
    } finally {
      logs.stop()
    }
  })

  it('a bad outputPipes is a clear config error', async () => {
    expect(() => new LocalExecutor(new Context(), { outputPipes: 'tty' as never })).toThrow(
      'invalid local executor config: outputPipes must be one of auto, fifo, socket',
    )
  })

  it('no descriptor and no FIFO is left behind: many commands, bursts past the pool, leftovers holding the pipes, kills, failed starts', async () => {
    const instance = await local({ graceMs: 100, drainMs: 200 } as LocalExecutorConfigInput)
    const bash = instance.executor
    await run(bash, 'true')
    // Let a background refill that the first command may have started finish.
    await new Promise((resolve) => setTimeout(resolve, 300))
    const pool = (bash as unknown as { pipePool: { size: number; dir: string } }).pipePool
    // Descriptors other than the pooled pipes (two each).
    const others = () => openFds() - 2 * pool.size
    const before = others()
    const pipesDir = pool.dir
    expect(dirname(pipesDir)).toBe(dirname(dirname(bash.ownerSpillDir(undefined))))
    // A burst of 40 at once needs 80 pipes: more than one batch, made on the spot.
    const burst = await Promise.all(Array.from({ length: 40 }, (_, i) => run(bash, `echo ${i}; echo e${i} >&2`)))
    expect(burst.map((r) => r.stdout.text)).toEqual(Array.from({ length: 40 }, (_, i) => `${i}\n`))
    expect(burst.map((r) => r.stderr.text)).toEqual(Array.from({ length: 40 }, (_, i) => `e${i}\n`))
    // A leftover that holds the pipes and ignores SIGTERM: the drain window, then SIGKILL.
    const held = await run(bash, "(trap '' TERM; sleep 30) & echo started")
    expect(held).toMatchObject({ stdout: { text: 'started\n' }, leftoverProcesses: 1 })
    const killed = start(bash, 'sleep 30')
    await bash.kill(killed.id)
    const timedOut = await run(bash, 'sleep 30', { timeoutMs: 200 })
    expect(timedOut.timedOut).toBe(true)
    await expect(run(bash, 'true', { workdir: join(dir.path, 'missing') })).rejects.toThrow('workdir does not exist')
    // Every command's read ends are closed, whatever the pool holds now.
    await vi.waitFor(() => expect(others()).toBe(before), WAIT)
    // Pooled pipes are open descriptors without a name: the directory holds no FIFO.
    expect(readdirSync(pipesDir)).toEqual([])
    await instance.dispose()
    expect(existsSync(pipesDir)).toBe(false)
    // Disposal closed the pooled pipes too, and the launcher helper's two (its stdin and stdout:
    // it was started by the first command, before \`before\` was counted).
    expect(openFds()).toBe(before - 2)
  })
})
