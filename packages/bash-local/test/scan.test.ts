import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { MARKER_VARIABLE } from '@deepseek-ai/dsh-bash-kit'
import { MarkerTracker } from '../src/marker.js'
import { allPids } from '../src/proc.js'
import { scanTree, sight, type TreeScan, TreeScanner } from '../src/scan.js'
import { killByEnv } from './stress.js'

const VAR = 'DSH_BASH_SCAN_TEST'

/** What the marker tracker did before issue 19: one read of environ, trusted. */
function naiveScan(value: string): Set<number> {
  const found = new Set<number>()
  for (const pid of allPids()) {
    try {
      if (readFileSync(`/proc/${pid}/environ`).includes(`${VAR}=${value}\0`)) found.add(pid)
    } catch {
      // gone
    }
  }
  return found
}

describe('scanning /proc for a tree (scan.ts)', () => {
  it('a process that re-executes itself without pause is found by every settled scan; one plain read misses it', { timeout: 90_000 }, async () => {
    const value = `${process.pid}-${Date.now()}`
    // Four session leaders (as escapees are), each replacing itself with a new bash forever: most
    // of their life is spent inside execve, where /proc/<pid>/environ reads empty.
    const reexec = `exec bash --noprofile --norc -c "$BASH_EXECUTION_STRING"`
    const pids: number[] = []
    for (let i = 0; i < 4; i++) {
      const child = spawn('setsid', ['bash', '--noprofile', '--norc', '-c', reexec], {
        env: { ...process.env, [VAR]: value, [MARKER_VARIABLE]: value },
        stdio: 'ignore',
      })
      child.on('error', () => {})
      pids.push(child.pid!)
    }
    // Wait for setsid to have exec'd bash (setsid execs in place: same pid).
    await new Promise((resolve) => setTimeout(resolve, 200))
    try {
      const scanner = new TreeScanner({ env: { name: VAR, value } })
      // The marker tracker over the same tree (not attached: they are session leaders, no group of a main process).
      const tracker = new MarkerTracker(value)
      let trackerEmpty = 0
      let trackerMisses = 0
      let naiveMisses = 0
      let settledMisses = 0
      let unsureSightings = 0
      let rounds = 0
      // The four processes are the CPU load. Until the race has shown itself (about one
      // one-read scan in twenty misses one of them on the 2-core VM), for at most 25 s.
      const until = performance.now() + 25_000
      for (; (rounds < 20 || naiveMisses < 1) && performance.now() < until; rounds++) {
        const naive = naiveScan(value)
        naiveMisses += pids.filter((pid) => !naive.has(pid)).length
        unsureSightings += scanTree(scanner.nextMatch()).unsure.size
        const settled = await scanner.settled()
        settledMisses += pids.filter((pid) => !settled.found.has(pid)).length
        if (tracker.isEmpty()) trackerEmpty++
        const live = await tracker.livePids()
        trackerMisses += pids.filter((pid) => !live.includes(pid)).length
      }
      console.log(
        `[scan] ${rounds} rounds over 4 self-re-executing processes: one-read scans missed ${naiveMisses} sightings, ` +
          `single passes saw ${unsureSightings} processes inside execve, settled scans missed ${settledMisses}; ` +
          `the marker tracker missed ${trackerMisses} and called the tree empty ${trackerEmpty} times`,
      )
      // The race is real here (this is the evidence for issue 19): at most one round in about 20
      // shows it, so it is asserted only when enough rounds ran (on a machine so loaded that a scan
      // takes a second, 25 s are only a few rounds: then the count is printed, not judged)…
      if (rounds >= 100) expect(naiveMisses).toBeGreaterThan(0)
      // …and the settled scan closes it, whatever the load.
      expect(settledMisses).toBe(0)
      expect(trackerMisses).toBe(0)
      expect(trackerEmpty).toBe(0)
    } finally {
      await killByEnv(VAR, value)
    }
  })

  it('a settled scan whose passes are slower than its time limit still looks again at a process caught inside an exec', async () => {
    // Scripted passes: the first catches pid 1001 inside an exec, the next sees it with the marker.
    // A time limit of 0 ms stands for a pass slower than the limit (0.4–0.7 s per pass at load 30).
    class Scripted extends TreeScanner {
      passes: TreeScan[] = [
        { found: new Set([1000]), unsure: new Set([1001]) },
        { found: new Set([1000, 1001]), unsure: new Set() },
      ]
      override once(): TreeScan {
        return this.passes.length > 1 ? this.passes.shift()! : this.passes[0]
      }
    }
    const scan = await new Scripted({ env: { name: VAR, value: 'scripted' } }, 0).settled()
    expect(scan).toEqual({ found: new Set([1000, 1001]), unsure: new Set() })
  })

  it('classifies zombies, kernel threads, this process and vanished pids', async () => {
    expect(sight(2).kind).toBe('kernel') // kthreadd
    expect(sight(process.pid).kind).toBe('live')
    expect(sight(0x3fffffff).kind).toBe('gone')
    // A zombie: a child that exited and is not reaped yet (node reaps on its own schedule: hold it with a stopped parent).
    // The child outlives the moment its parent stops (sleep 0.3): with `true &` bash sometimes reaped it
    // before `kill -STOP` ran, and no zombie ever appeared (seen once in a clean-clone run).
    const parent = spawn('bash', ['--noprofile', '--norc', '-c', 'sleep 0.3 & kill -STOP $$; wait'], { stdio: 'ignore' })
    try {
      let zombie: number | undefined
      for (let i = 0; i < 500 && zombie === undefined; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10))
        for (const pid of allPids()) {
          try {
            const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
            if (stat.includes(`) Z ${parent.pid} `)) zombie = pid
          } catch {
            // gone
          }
        }
      }
      expect(zombie).toBeDefined()
      expect(sight(zombie!).kind).toBe('zombie')
    } finally {
      parent.kill('SIGKILL')
    }
  })

  it('a child that cleared its environment and left the group is found through its parent while the parent lives', async () => {
    const value = `${process.pid}-closure-${Date.now()}`
    const child = spawn('bash', ['--noprofile', '--norc', '-c', 'env -i setsid sleep 1000 & wait'], {
      env: { ...process.env, [VAR]: value },
      stdio: 'ignore',
    })
    let found: number[] = []
    try {
      const scanner = new TreeScanner({ env: { name: VAR, value } })
      // Until the child has exec'd `sleep` (before, the forked shell still carries the marker).
      const sleeping = (pids: number[]) => pids.some((pid) => pid !== child.pid && cmdlineOf(pid).startsWith('sleep\0'))
      for (let i = 0; i < 200 && !(found.length >= 2 && sleeping(found)); i++) {
        await new Promise((resolve) => setTimeout(resolve, 10))
        found = [...(await scanner.settled()).found]
      }
      expect(found).toHaveLength(2)
      const sleeper = found.find((pid) => pid !== child.pid)!
      expect(readFileSync(`/proc/${sleeper}/environ`).length).toBe(0)
      process.kill(sleeper, 'SIGKILL')
    } finally {
      child.kill('SIGKILL')
      // The sleeper has no marker left (env -i) for the suite's leak check: killed here, also when a check failed.
      for (const pid of found.filter((pid) => pid !== child.pid)) {
        try {
          process.kill(pid, 'SIGKILL')
        } catch {
          // Already gone.
        }
      }
    }
  })
})

function cmdlineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1')
  } catch {
    return ''
  }
}
