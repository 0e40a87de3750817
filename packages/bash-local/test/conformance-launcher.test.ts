import { defineBashExecutorConformance } from '@deepseek-ai/dsh-bash/conformance'
import { CGROUP_VARIABLE } from '@deepseek-ai/dsh-bash-kit'
import { readdirSync } from 'node:fs'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { nativeHelperPath } from '../src/helper-launch.js'
import { cgroupAvailable, countProcesses, createLocal, scratchDir, serverProcess } from './helpers.js'

const dir = scratchDir()
afterAll(() => dir.remove())

// The launcher helper is the default (the other conformance files run with it): here the same suite
// with `launcher: 'spawn'`, the commands forked by this event loop, which stays available.
const containment = cgroupAvailable() ? 'cgroup' : 'auto'
const server = serverProcess(containment)
defineBashExecutorConformance(`local executor (${containment}, launcher spawn)`, {
  create: (config) => createLocal({ containment, launcher: 'spawn', ...config }),
  countProcesses,
  workdir: dir.path,
  graceMs: 300,
  serverProcess: { ...server, config: { ...server.config, launcher: 'spawn' } },
})

describe('launcher helper', () => {
  it('the command is forked by the helper (native by default where it ships, else Node), not by this process; with stdin it is spawned here; with spawn, here', async () => {
    const expected = { 'helper-native': 'dsh-launcher-linux-', 'helper-node': 'launcher-helper.js' } as const
    for (const launcher of ['helper', 'helper-node'] as const) {
      const { executor, dispose } = await createLocal({ containment, launcher })
      try {
        const chosen = (executor as unknown as { launcher: 'spawn' | 'helper-native' | 'helper-node' }).launcher
        if (launcher === 'helper') expect(chosen).toBe(nativeHelperPath() ? 'helper-native' : 'helper-node')
        else expect(chosen).toBe('helper-node')
        const result = await executor.run(executor.resolve({ command: 'tr "\\0" " " < /proc/$PPID/cmdline; echo; echo $PPID', workdir: dir.path }))
        const [cmdline, ppid] = result.stdout.text.trim().split('\n')
        expect(Number(ppid)).not.toBe(process.pid)
        expect(cmdline).toContain(expected[chosen as keyof typeof expected])
        const withStdin = await executor.run(executor.resolve({ command: 'cat >/dev/null; echo $PPID', workdir: dir.path, stdin: 'x' }))
        expect(Number(withStdin.stdout.text.trim())).toBe(process.pid)
      } finally {
        await dispose()
      }
    }
    const spawned = await createLocal({ containment, launcher: 'spawn' })
    try {
      const result = await spawned.executor.run(spawned.executor.resolve({ command: 'echo $PPID', workdir: dir.path }))
      expect(Number(result.stdout.text.trim())).toBe(process.pid)
    } finally {
      await spawned.dispose()
    }
  })

  it.each(['helper', 'helper-node'] as const)('a burst past the pipe pool (%s): the helper makes the FIFOs, every output arrives, no FIFO and no descriptor is left', async (launcher) => {
    const { executor, dispose } = await createLocal({ containment, launcher, drainMs: 200 })
    try {
      const pool = (executor as unknown as { pipePool: { size: number; dir: string } }).pipePool
      // 60 at once take 120 pipes: the first batch (64) and more from the helper, waited for.
      const burst = await Promise.all(
        Array.from({ length: 60 }, (_, i) => executor.run(executor.resolve({ command: `echo ${i}; echo e${i} >&2`, workdir: dir.path }))),
      )
      expect(burst.map((r) => r.stdout.text)).toEqual(Array.from({ length: 60 }, (_, i) => `${i}\n`))
      expect(burst.map((r) => r.stderr.text)).toEqual(Array.from({ length: 60 }, (_, i) => `e${i}\n`))
      // A batch may still be in flight (made by the helper, adopted a slice per loop turn): then none is left.
      await vi.waitFor(() => expect(readdirSync(pool.dir)).toEqual([]), { timeout: 10_000 })
    } finally {
      await dispose()
    }
  })

  it('the command sees the same environment, byte for byte and in the same order, through the helper as with spawn', async () => {
    // `env` prints the variables in the order the process received them. The cgroup variable names
    // each command's own cgroup (it differs between any two commands): its value is masked.
    const mask = (text: string) => text.split('\n').map((line) => (line.startsWith(`${CGROUP_VARIABLE}=`) ? `${CGROUP_VARIABLE}=…` : line))
    const specs = [
      { command: 'env' },
      { command: 'env', env: { DSH_LAUNCH3_EXTRA: 'a b c', PATH: `/opt/nowhere:${process.env.PATH}` } },
      { command: 'env', env: { BASH_ENV: '/dev/null', HOME: '/nonexistent-home' } },
      { command: 'env' },
      // Most of the environment different (PATH kept: `env` must be found).
      { command: 'env', env: Object.fromEntries(Object.keys(process.env).filter((key) => key !== 'PATH').map((key) => [key, 'x'])) },
      { command: 'env', env: { DSH_LAUNCH3_Z: 'z', DSH_LAUNCH3_A: 'a' } },
    ]
    const outputs: Record<string, string[][]> = {}
    for (const launcher of ['helper', 'helper-node', 'spawn'] as const) {
      const { executor, dispose } = await createLocal({ containment, launcher })
      try {
        outputs[launcher] = []
        for (const spec of specs) {
          const result = await executor.run(executor.resolve({ ...spec, workdir: dir.path }))
          expect(result.exitCode).toBe(0)
          outputs[launcher]!.push(mask(result.stdout.text))
        }
      } finally {
        await dispose()
      }
    }
    expect(outputs.helper![1]).toContain('DSH_LAUNCH3_EXTRA=a b c')
    expect(outputs.helper![4]!.filter((line) => line.startsWith('HOME='))).toEqual(['HOME=x'])
    expect(outputs.helper).toEqual(outputs.spawn)
    expect(outputs['helper-node']).toEqual(outputs.spawn)
  })

  it('the command starts with the same signal mask, ignored signals, $0 and no login shell through each launcher', async () => {
    const command = 'grep -E "^(SigBlk|SigIgn)" /proc/$$/status; echo "$0"; shopt -q login_shell && echo login || echo not-login'
    const outputs: Record<string, string> = {}
    for (const launcher of ['helper', 'helper-node', 'spawn'] as const) {
      const { executor, dispose } = await createLocal({ containment, launcher })
      try {
        outputs[launcher] = (await executor.run(executor.resolve({ command, workdir: dir.path }))).stdout.text
      } finally {
        await dispose()
      }
    }
    expect(outputs.spawn).toMatch(/not-login\n$/)
    expect(outputs.helper).toEqual(outputs.spawn)
    expect(outputs['helper-node']).toEqual(outputs.spawn)
  })
})

