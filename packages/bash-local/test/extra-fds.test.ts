import { mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Context } from 'cordis'
import { loadExecutorPlugin } from '@deepseek-ai/dsh-bash/conformance'
import { afterAll, describe, expect, it } from 'vitest'
import { LocalExecutor, type LocalExecutorConfigInput, type LaunchTransform } from '../src/index.js'
import { nativeHelperPath } from '../src/helper-launch.js'
import { cgroupAvailable, scratchDir } from './helpers.js'

const dir = scratchDir()
afterAll(() => dir.remove())
const containment = cgroupAvailable() ? 'cgroup' : 'auto'

/**
 * A transform like the sandbox's: it opens descriptors for the command (a file to write, one to
 * read, a directory) and hands them over as fd 3, 4, 5; the launcher closes its own copies.
 */
function transformWithFds(root: string, opened: number[]): LaunchTransform {
  return ({ line, label }) => {
    const fds = [
      openSync(join(root, `${label}-status`), 'wx', 0o600),
      openSync(join(root, 'input'), 'r'),
      openSync(join(root, 'tree'), 'r'),
    ]
    opened.push(...fds)
    const script = 'echo "status of $1" >&3; cat <&4; ls /proc/self/fd/5/; tr "\\0" " " < /proc/$PPID/cmdline; echo'
    return {
      kind: 'launch',
      line: { ...line, file: '/bin/bash', args: ['--noprofile', '--norc', '-c', script, 'x', label], joinsThroughBashEnv: false, extraFds: fds },
      cleanup: [],
    }
  }
}

/** This process's descriptors open on anything under `root`. */
function openUnder(root: string): string[] {
  const found: string[] = []
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`)
      if (target.startsWith(root)) found.push(`${fd} -> ${target}`)
    } catch {
      // Closed meanwhile (readdir's own descriptor).
    }
  }
  return found
}

describe('extra descriptors of a transformed launch (the sandbox\'s status file, seccomp program, protected directories)', () => {
  for (const launcher of ['helper', 'helper-node', 'spawn'] as const) {
    it(`reach the command as fd 3, 4, 5 and none stays open in the server (launcher ${launcher})`, async () => {
      const root = join(dir.path, launcher)
      mkdirSync(join(root, 'tree', 'inside'), { recursive: true })
      writeFileSync(join(root, 'input'), 'from fd 4\n')
      const opened: number[] = []
      const transform = transformWithFds(root, opened)
      class WithFds extends LocalExecutor {
        constructor(ctx: Context, config: LocalExecutorConfigInput) {
          super(ctx, config, transform)
        }
      }
      const { executor, dispose } = await loadExecutorPlugin(WithFds, { containment, launcher, graceMs: 300 })
      try {
        // Warm: the helper and the pipe pool exist before the descriptors are counted.
        await executor.run(executor.resolve({ command: 'true', workdir: dir.path }))
        const results = await Promise.all([1, 2, 3].map(() => executor.run(executor.resolve({ command: 'true', workdir: dir.path }))))
        for (const result of results) {
          expect(result.stderr.text).toBe('')
          const lines = result.stdout.text.split('\n')
          expect(lines[0]).toBe('from fd 4')
          expect(lines[1]).toBe('inside')
          // Who forked it: the helper in use (native by default where it ships), this process with `launcher: 'spawn'`.
          const chosen = (executor as unknown as { launcher: string }).launcher
          if (chosen === 'helper-native') expect(lines[2]).toContain('dsh-launcher-linux-')
          else if (chosen === 'helper-node') expect(lines[2]).toContain('launcher-helper.js')
          else expect(lines[2]).not.toMatch(/launcher-helper\.js|dsh-launcher-linux-/)
          expect(chosen).toBe(launcher === 'spawn' ? 'spawn' : launcher === 'helper-node' ? 'helper-node' : nativeHelperPath() ? 'helper-native' : 'helper-node')
        }
        const statuses = readdirSync(root).filter((name) => name.endsWith('-status')).sort()
        expect(statuses).toHaveLength(4)
        for (const name of statuses) expect(readFileSync(join(root, name), 'utf8')).toBe(`status of ${name.replace(/-status$/, '')}\n`)
        // Every descriptor the transform opened is closed again (the launcher's job), none left behind.
        expect(opened).toHaveLength(12)
        expect(openUnder(root)).toEqual([])
      } finally {
        await dispose()
      }
    })
  }
})
