import { type ChildProcess, spawn } from 'node:child_process'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { freezeAndKill } from '../src/exact-kill.js'
import { readStat } from '../src/proc.js'
import { type TreeScan, TreeScanner } from '../src/scan.js'
import { killByEnv } from './stress.js'

const started: ChildProcess[] = []
afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL')
})

/** A `sleep` in a session and group of its own (its pid is its group id). */
async function sleeper(): Promise<number> {
  const child = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' })
  started.push(child)
  await new Promise((resolve) => child.once('spawn', resolve))
  return child.pid!
}

/** Its state letter from /proc (R, S, T…), or 'gone' (reaped or a zombie). */
function state(pid: number): string {
  const stat = readStat(pid)
  return !stat || stat.state === 'Z' ? 'gone' : stat.state
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10))
}

/** A scripted target: its scans answer from `plan` in turn (the last answer repeats), live pids only. */
function scripted(pgid: number, plan: number[][]): { scan(): Promise<TreeScan>; pgid: number } {
  let n = 0
  return {
    pgid,
    async scan() {
      const pids = plan[Math.min(n++, plan.length - 1)]
      return { found: new Set(pids.filter((pid) => state(pid) !== 'gone')), unsure: new Set() }
    },
  }
}

describe('freezeAndKill never signals what is no longer of the tree', () => {
  it("a group number none of the found processes is in (its members gone, the number a stranger's now) is not signalled", async () => {
    const ours = await sleeper()
    const stranger = await sleeper()
    // The tree's old group number is the stranger's group now; the scans find only our process.
    const done = await freezeAndKill(scripted(stranger, [[ours]]))
    expect(done).toBe(true)
    await until(() => state(ours) === 'gone')
    expect(state(ours)).toBe('gone')
    // Before: SIGSTOP to the group before any scan, SIGKILL to it after: the stranger died.
    expect(state(stranger)).toMatch(/^[RS]$/)
  })

  it('a pid frozen in one round but missing from the last scan is not killed at the end: it gets SIGCONT', async () => {
    const ours = await sleeper()
    const stranger = await sleeper()
    // Round 1 finds both (the stranger stands for a process of the tree that ended right after the
    // scan, its number taken at once); from round 2 on only ours is found.
    const done = await freezeAndKill(scripted(0, [[ours, stranger], [ours]]))
    expect(done).toBe(true)
    await until(() => state(ours) === 'gone')
    expect(state(ours)).toBe('gone')
    // Before: every pid frozen since the start got SIGKILL. Now: SIGCONT, it runs on (not stopped).
    await until(() => state(stranger) !== 'T')
    expect(state(stranger)).toMatch(/^[RS]$/)
  })

  it("the tree's own group is still signalled while a found process is in it (members the scan has not found yet die too)", async () => {
    // A shell leading its own group, with a background member the scans never find.
    const shell = spawn('bash', ['--noprofile', '--norc', '-c', 'sleep 30 & echo $!; wait'], { detached: true, stdio: ['ignore', 'pipe', 'ignore'] })
    started.push(shell)
    const memberPid = Number(await new Promise<string>((resolve) => shell.stdout!.once('data', (chunk) => resolve(String(chunk)))))
    const leader = shell.pid!
    expect(readStat(memberPid)?.pgid).toBe(leader)
    const member = { pid: memberPid }
    const done = await freezeAndKill(scripted(leader, [[leader], [leader]]))
    expect(done).toBe(true)
    await until(() => state(member.pid!) === 'gone')
    expect(state(member.pid!)).toBe('gone')
  })
})

describe('freezeAndKill under load', () => {
  it('a scan slower than the time limit does not end the kill: the scans count, and a fork in flight is frozen and killed too', async () => {
    // At a load average of 35 one settled scan took over 5 s: the tree forked on while it ran, and a
    // kill limited by time alone gave up after it, nothing frozen, leaving what was forked meanwhile.
    // Here the first scan is made stale the same way (it returns only once the tree has forked a
    // process it did not see) and the time limit is 0 ms: only the scans bound the kill.
    const name = 'DSH_BASH_KILL_TEST'
    const value = `${process.pid}-${Date.now()}`
    const tree = spawn('bash', ['--noprofile', '--norc', '-c', `trap '' TERM; while :; do sleep 30 & sleep 0.05; done`], {
      env: { ...process.env, [name]: value },
      detached: true,
      stdio: 'ignore',
    })
    started.push(tree)
    const scanner = new TreeScanner({ env: { name, value } })
    try {
      await until(() => scanner.once().found.size >= 2)
      let stale = true
      const target = {
        pgid: 0,
        async scan(): Promise<TreeScan> {
          const scan = await scanner.settled()
          if (stale) {
            stale = false
            await vi.waitFor(() => expect([...scanner.once().found].some((pid) => !scan.found.has(pid))).toBe(true), { timeout: 20_000, interval: 10 })
          }
          return scan
        },
      }
      expect(await freezeAndKill(target, { ms: 0, scans: 20 })).toBe(true)
      expect((await scanner.settled()).found).toEqual(new Set())
    } finally {
      await killByEnv(name, value)
    }
  })
})
