/**
 * Resource limits per command (issue 27, item 3), with real cgroups: each test's command stays far
 * below what this machine has (hundreds of MB, tens of processes), and the limits under test are
 * small; a failure of a limit costs nothing. The fork bomb and the 30 GB allocation of the issue
 * run only in packages/cli/test/mcp-limits.test.ts, inside an outer cgroup.
 */
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { ownV1Directory, ResourceControl } from '../src/limits.js'
import { createLocal, type LocalInstance } from './helpers.js'

const MiB = 2 ** 20
const instances: LocalInstance[] = []
afterAll(async () => {
  await Promise.all(instances.map((i) => i.dispose()))
})

async function local(limits: Record<string, unknown>) {
  const instance = await createLocal({ limits })
  instances.push(instance)
  return instance.executor
}

/** Where limits can be held by a cgroup here (v2 with controllers, or v1): else these tests skip. */
const probe = ResourceControl.create({ memory: 64 * MiB, pids: 64 }, undefined)
const cgroupHeld = probe.mechanisms.memory !== 'rlimit' && probe.mechanisms.pids !== 'rlimit'
probe.dispose()
if (!cgroupHeld) console.warn(`[bash-local limits] no cgroup holds limits here (${probe.note}): the cgroup tests skip`)

/** Writes `n` MiB, 1 MiB at a time (each piece written: the memory is really used). */
const allocate = (n: number) => `python3 -c 'b = [b"x" * 2**20 for _ in range(${n})]; print("allocated")'`

describe.skipIf(!cgroupHeld)('limits held by the command\'s cgroup', () => {
  it('memory: an allocation past the limit is killed, with limitReached; under it, it completes (the control); both report their peak and CPU time', async () => {
    const bash = await local({ memory: '128M' })
    const over = await bash.run(bash.resolve({ command: allocate(400) }))
    expect({ signal: over.signal, limit: over.limitReached }).toEqual({ signal: 'SIGKILL', limit: { memoryBytes: 128 * MiB } })
    expect(over.peakMemoryBytes).toBeGreaterThanOrEqual(120 * MiB)
    expect(over.peakMemoryBytes).toBeLessThanOrEqual(128 * MiB)
    const under = await bash.run(bash.resolve({ command: allocate(32) }))
    expect({ out: under.stdout.text, exit: under.exitCode, limit: under.limitReached }).toEqual({ out: 'allocated\n', exit: 0, limit: undefined })
    expect(under.peakMemoryBytes).toBeGreaterThanOrEqual(32 * MiB)
    expect(under.cpuMs).toBeGreaterThan(0)
  })

  it('processes: forks past the limit are refused, with limitReached; a task ended by it carries it too', async () => {
    const bash = await local({ pids: 20 })
    const over = await bash.run(bash.resolve({ command: 'for i in $(seq 40); do sleep 5 & done; wait' }))
    expect(over.limitReached).toEqual({ processes: 20 })
    expect(over.stderr.text).toMatch(/fork: (retry: )?Resource temporarily unavailable/)
    const task = bash.start(bash.resolve({ command: 'for i in $(seq 40); do sleep 5 & done; wait' }))
    await task.done
    expect(task.limitReached).toEqual({ processes: 20 })
    // The control: under the limit, no fork is refused and nothing is reported.
    const fine = await bash.run(bash.resolve({ command: 'for i in $(seq 5); do sleep 0.1 & done; wait; echo done' }))
    expect({ out: fine.stdout.text, limit: fine.limitReached }).toEqual({ out: 'done\n', limit: undefined })
  })

  it('cpu: the quota is the cores asked for (a v1 or v2 cpu cgroup of the command)', async () => {
    const bash = await local({ cpu: 0.25 })
    const mechanism = bash.resources.mechanisms.cpu
    expect(['cgroup1', 'cgroup2']).toContain(mechanism)
    // Read by the command itself: its cgroup is removed when it ends.
    const command =
      mechanism === 'cgroup1'
        ? `d=${ownV1Directory('cpu', undefined, '1:cpu:/')}$(sed -n 's/^[0-9]*:[^:]*\\bcpu\\b[^:]*:\\(.*\\)$/\\1/p' /proc/self/cgroup); cat "$d/cpu.cfs_quota_us" "$d/cpu.cfs_period_us"`
        : 'cat "$(sed -n "s/^0:://p" /proc/self/cgroup | sed "s|^|/sys/fs/cgroup|")/cpu.max"'
    const quota = await bash.run(bash.resolve({ command }))
    expect(quota.stdout.text).toBe(mechanism === 'cgroup1' ? '25000\n100000\n' : '25000 100000\n')
  })

  it('the limit variables of a trusted caller cannot switch a limit off', async () => {
    const bash = await local({ pids: 20 })
    const env = { DSH_BASH_CGROUP_PIDS: '', DSH_BASH_CGROUP_MEMORY: '/nonexistent', DSH_BASH_RLIMIT_AS: '' }
    const over = await bash.run(bash.resolve({ command: 'for i in $(seq 40); do sleep 5 & done; wait', env }))
    expect(over.limitReached).toEqual({ processes: 20 })
  })
})

/**
 * Without any cgroup (the executor in a mount namespace where /sys/fs/cgroup is an empty tmpfs): the
 * rlimit fallback. Needs root for the mount namespace.
 */
const canHideCgroups = process.getuid?.() === 0 && spawnSync('unshare', ['--mount', '--propagation', 'private', 'true']).status === 0

describe.skipIf(!canHideCgroups)('without cgroups: rlimits stand in (memory per process, processes per user)', () => {
  it('memory becomes RLIMIT_AS (ulimit -v); an allocation past it fails in the program (no kill, so no marker); CPU is not enforced and says so', () => {
    const module = fileURLToPath(new URL('../dist/index.js', import.meta.url))
    const script = `
      const { Context } = await import('cordis')
      const { LocalExecutor } = await import(${JSON.stringify(module)})
      const root = new Context()
      const executor = new LocalExecutor(root, { limits: { memory: '256M', pids: 50, cpu: 1 }, graceMs: 300 })
      const run = (command) => executor.run(executor.resolve({ command }))
      const limits = await run('ulimit -v; ulimit -u')
      const big = await run(${JSON.stringify(allocate(400))})
      console.log(JSON.stringify({ containment: executor.containment, mechanisms: executor.resources.mechanisms, note: executor.resources.note, limits: limits.stdout.text, big: { exit: big.exitCode, err: big.stderr.text.trim().split('\\n').at(-1), limit: big.limitReached ?? null } }))
      await executor.shutdown()
    `
    const result = spawnSync('unshare', ['--mount', '--propagation', 'private', '--', 'sh', '-c', 'mount -t tmpfs none /sys/fs/cgroup && exec "$@"', 'sh', process.execPath, '--input-type=module', '-e', script], {
      encoding: 'utf8',
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      timeout: 60_000,
    })
    expect(result.status, result.stderr).toBe(0)
    const report = JSON.parse(result.stdout.trim().split('\n').at(-1)!)
    expect(report).toEqual({
      containment: 'marker',
      mechanisms: { memory: 'rlimit', pids: 'rlimit', cpu: 'none' },
      note: expect.stringMatching(/memory is limited per process \(RLIMIT_AS\); processes are limited per user \(RLIMIT_NPROC\).*; the CPU limit is not enforced/),
      limits: `${256 * 1024}\n50\n`,
      big: { exit: 1, err: 'MemoryError', limit: null },
    })
  })
})

describe('capabilities.limits: what the executor claims it can hold is what a configured limit gets', () => {
  it('memory always; processes by a cgroup or (not root) the rlimit; cpu only by a cgroup; the same claim with and without limits configured', async () => {
    const bare = await local({})
    const limited = await local({ memory: '256M', pids: 200, cpu: 1 })
    const { mechanisms } = limited.resources
    const root = process.getuid?.() === 0
    const held = (controller: 'memory' | 'pids' | 'cpu') =>
      mechanisms[controller] === 'cgroup1' || mechanisms[controller] === 'cgroup2' || (mechanisms[controller] === 'rlimit' && !(controller === 'pids' && root))
    const expected = (['memory', 'pids', 'cpu'] as const).filter(held)
    expect(limited.capabilities.limits).toEqual(expected)
    expect(bare.capabilities.limits).toEqual(expected)
    expect(expected).toContain('memory')
    // A claimed limit holds: the memory one stops what the control (no limit) completes.
    const allocation = 'python3 -c \'b = [b"x" * 2**20 for _ in range(200)]; print("allocated")\''
    const small = await local({ memory: '64M' })
    const over = await small.run(small.resolve({ command: allocation }))
    const control = await bare.run(bare.resolve({ command: allocation }))
    expect(control.stdout.text).toBe('allocated\n')
    expect(over.stdout.text).toBe('')
    expect(over.exitCode === 0 && over.signal === null).toBe(false)
  })
})
