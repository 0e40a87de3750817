import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { formatSize } from '@deepseek-ai/dsh-bash'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { limitDefaults } from '../src/limit-defaults.js'
import { bash, ROOT, startStdio, type StdioServer, waitFor } from './helpers.js'
import { type SafetyCgroup, safetyCgroup } from './safety-cgroup.js'

// Issue 27, item 3 and its acceptance: with the defaults of `dsh-bash mcp --executor sandbox`, a fork
// bomb and a 30 GB allocation each end within the call's timeout with the limit marker, the server
// answers the next call, and nothing is left. Each server under test runs inside an outer cgroup
// (safety-cgroup.ts) with limits of its own: were the limits under test to fail, that one holds, and
// these tests never run where it cannot be made.

const GiB = 2 ** 30
const defaults = limitDefaults()
const sandboxBuilt = existsSync(join(ROOT, 'packages/bash-sandbox/dist/index.js'))
const bwrapWorks = spawnSync('bwrap', ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-net', 'true']).status === 0
const probe = safetyCgroup({ memoryBytes: GiB, pids: 100 })
if ('remove' in probe) probe.remove()
const reason = !sandboxBuilt ? 'bash-sandbox is not built' : !bwrapWorks ? 'bwrap cannot create a sandbox here' : 'reason' in probe ? probe.reason : undefined
if (reason) console.warn(`[mcp-limits] skipped (a fork bomb never runs without an outer limit): ${reason}`)

const FORK_BOMB = ':(){ :|:& };:'
/**
 * The bomb, then its shell stays until a fork of the bomb was refused (or 60 s): the bomb above
 * leaves at once (its processes are leftovers, stopped at once), and the marker is only ever shown
 * when forks were refused. Fixed pauses were not enough beside four busy loops at load 60 (5 s made
 * 477 processes of 1024; "no new highest count for 2 s" stopped at 332). So the bomb's stderr goes
 * to a file the shell watches with builtins only (no fork: `[[ -s ]]`, `read`), and is then shown
 * as the command's stderr. `true`, never `:` (the bomb is `:`).
 */
const FORK_BOMB_PAUSED = `${FORK_BOMB} 2>/tmp/bomb.err; until [[ -s /tmp/bomb.err ]] || ((SECONDS >= 60)); do true; done; IFS= read -r -d '' err </tmp/bomb.err; printf '%s' "$err" >&2`
/** 30 GiB in 1 MiB pieces, each written: a single 30 GB malloc is refused by the kernel's overcommit check up front (MemoryError), which tests nothing. */
const ALLOCATE_30G = `python3 -c 'b = [b"x" * 2**20 for _ in range(30 * 1024)]'`

/** A server in its own outer cgroup; `stop` ends both. */
async function serverIn(limits: { memoryBytes: number; pids: number }, args: string[], workdir: string): Promise<{ server: StdioServer; safety: SafetyCgroup; stop(): Promise<void> }> {
  const safety = safetyCgroup(limits)
  if ('reason' in safety) throw new Error(safety.reason)
  // The calls wait for their command (no yield to the background after 50 s: beside busy loops the
  // 30 GB allocation took longer to reach its limit); every limit keeps its default.
  const server = await startStdio(['--executor', 'sandbox', '--workdir', workdir, '--yield-after', '0', ...args], { wrap: safety.wrap })
  return {
    server,
    safety,
    stop: async () => {
      await server.close()
      await waitFor('the outer cgroup to empty', () => safety.pids() === 0, 30_000)
      safety.remove()
    },
  }
}

describe.skipIf(reason !== undefined)('dsh-bash mcp --executor sandbox: the default limits hold', () => {
  let dir: string
  let under: Awaited<ReturnType<typeof serverIn>>

  beforeAll(async () => {
    dir = realpathSync(mkdtempSync('/var/tmp/dsh-e2e-limits-'))
    // The outer limits sit above the defaults under test: the command reaches its own first.
    under = await serverIn({ memoryBytes: defaults.memory + 1.5 * GiB, pids: defaults.pids + 512 }, [], dir)
  }, 60_000)

  afterAll(async () => {
    await under?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  }, 60_000)

  it('a fork bomb ends at once (its processes are stopped as leftovers); the next call answers; nothing is left', async () => {
    const { server, safety } = under
    await bash(server.client, 'true')
    const baseline = safety.pids()
    const bomb = await bash(server.client, FORK_BOMB, { timeoutMs: 90_000 })
    expect(bomb.isError).toBe(false)
    expect(bomb.texts[0]).toMatch(/\[stopped \d+ leftover process\(es\); use run_in_background for servers and watchers\](\n\[process limit \d+ reached\])?$/)
    expect(bomb.texts[0]).not.toContain('[timed out')
    expect(await bash(server.client, 'echo answered')).toEqual({ texts: ['answered\n'], isError: false })
    await waitFor('the bomb to be gone', () => safety.pids() <= baseline, 30_000)
  }, 180_000)

  it(`a fork bomb that reaches the limit says so: [process limit ${defaults.pids} reached]; nothing is left`, async () => {
    const { server, safety } = under
    // After a call: the executor keeps a launcher ready for the next command (one more process).
    await bash(server.client, 'true')
    const baseline = safety.pids()
    const bomb = await bash(server.client, FORK_BOMB_PAUSED, { timeoutMs: 90_000 })
    expect(bomb.isError).toBe(false)
    expect(bomb.texts[0]).toMatch(/fork: (retry: )?Resource temporarily unavailable/)
    expect(bomb.texts[0]).toMatch(new RegExp(`\\n\\[stopped \\d+ leftover process\\(es\\); use run_in_background for servers and watchers\\]\\n\\[process limit ${defaults.pids} reached\\]$`))
    expect(await bash(server.client, 'echo answered')).toEqual({ texts: ['answered\n'], isError: false })
    await waitFor('the bomb to be gone', () => safety.pids() <= baseline, 30_000)
  }, 180_000)

  it(`a 30 GB allocation is killed at the memory limit (${formatSize(defaults.memory)}) with the marker; the server answers on`, async () => {
    const { server, safety } = under
    const baseline = safety.pids()
    // 240 s: beside four busy loops at load 58, 90 s was not enough to write 5.5 GiB.
    const big = await bash(server.client, ALLOCATE_30G, { timeoutMs: 240_000 })
    expect(big).toEqual({ texts: [`(no output)\n[killed: memory limit ${formatSize(defaults.memory)} reached]\n[killed by signal: SIGKILL]`], isError: false })
    expect(await bash(server.client, 'echo answered')).toEqual({ texts: ['answered\n'], isError: false })
    await waitFor('nothing left', () => safety.pids() <= baseline, 30_000)
  }, 330_000)

  it('the default /tmp holds 100 MB (the --limit-tmp test below is the limit, not a small /tmp)', async () => {
    const write = await bash(under.server.client, 'head -c 100M /dev/zero > /tmp/big && stat -c %s /tmp/big')
    expect(write).toEqual({ texts: ['104857600\n'], isError: false })
  }, 60_000)
})

describe.skipIf(reason !== undefined)('dsh-bash mcp --executor sandbox --limit-tmp 64M', () => {
  it('writing 100 MB to /tmp fails with ENOSPC', async () => {
    const dir = realpathSync(mkdtempSync('/var/tmp/dsh-e2e-limits-tmp-'))
    const under = await serverIn({ memoryBytes: 2 * GiB, pids: 512 }, ['--limit-tmp', '64M'], dir)
    try {
      const write = await bash(under.server.client, 'head -c 100M /dev/zero > /tmp/big; stat -c %s /tmp/big')
      expect(write.texts[0]).toBe("67108864\n[stderr]\nhead: error writing 'standard output': No space left on device\n")
    } finally {
      await under.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)
})

describe.skipIf(reason !== undefined)('controls: without the limits under test, the markers are absent (only the outer cgroup stops it)', () => {
  let dir: string

  beforeAll(() => {
    dir = realpathSync(mkdtempSync('/var/tmp/dsh-e2e-limits-control-'))
  })

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('--limit-pids none: the bomb reaches the outer limit, no process limit marker', async () => {
    const under = await serverIn({ memoryBytes: 2 * GiB, pids: 300 }, ['--limit-pids', 'none'], dir)
    try {
      const bomb = await bash(under.server.client, FORK_BOMB_PAUSED, { timeoutMs: 90_000 })
      expect(bomb.texts[0]).toMatch(/\[stopped \d+ leftover process\(es\); use run_in_background for servers and watchers\]$/)
      expect(bomb.texts[0]).toMatch(/fork: (retry: )?Resource temporarily unavailable/)
      expect(bomb.texts[0]).not.toContain('[process limit')
    } finally {
      await under.stop()
    }
  }, 180_000)

  it('--limit-memory none: the outer limit kills the allocation, no memory limit marker', async () => {
    const under = await serverIn({ memoryBytes: 1.5 * GiB, pids: 512 }, ['--limit-memory', 'none'], dir)
    try {
      const big = await bash(under.server.client, ALLOCATE_30G, { timeoutMs: 240_000 })
      expect(big).toEqual({ texts: ['(no output)\n[killed by signal: SIGKILL]'], isError: false })
    } finally {
      await under.stop()
    }
  }, 330_000)
})
