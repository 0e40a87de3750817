import { spawn } from 'node:child_process'
import { afterEach, describe, expect, it } from 'vitest'
import { ProcessGroupTracker } from '../src/pgroup.js'
import { readStat } from '../src/proc.js'

/**
 * A process must get a graceful SIGTERM once: a second one, arriving after a shell started its TERM
 * trap, runs the trap again (seen in a clean-clone run at load 20: `trapped` printed twice). The
 * process group tracker signals the group as a whole and one by one only those that left it.
 */
describe('signalAll reaches each process once', () => {
  const pids: number[] = []
  afterEach(() => {
    for (const pid of pids.splice(0)) {
      try {
        process.kill(-pid, 'SIGKILL')
      } catch {
        // gone
      }
    }
  })

  it('pgroup: the group as a whole (its leader listed), members in the group never one by one, leavers one by one', async () => {
    // A new session (detached): a group member (sleep) and a child that left the group (setsid sleep).
    const leader = spawn('bash', ['--noprofile', '--norc', '-c', 'trap "" TERM; sleep 30 & setsid sleep 30 & wait'], { detached: true, stdio: 'ignore' })
    pids.push(leader.pid!)
    const tracker = new ProcessGroupTracker()
    tracker.attach(leader.pid!)
    let found: number[] = []
    const left = () => found.find((pid) => readStat(pid)?.pgid !== leader.pid)
    // Until the leaver has left: `setsid` is found (through its parent) from its fork on, but is in the
    // group until it calls setsid() (CI 2026-12-03 caught all three still in the group at load).
    for (let i = 0; i < 500 && (found.length < 3 || left() === undefined); i++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
      found = tracker.pids()
    }
    expect(found).toHaveLength(3)
    const leaver = left()!
    expect(leaver).toBeDefined()
    pids.push(leaver)
    // SIGCONT: harmless to all three, and what signalAll answers is what matters here.
    const signalled = tracker.signalAll('SIGCONT')
    expect(signalled.sort()).toEqual([leader.pid!, leaver].sort())
  })
})
