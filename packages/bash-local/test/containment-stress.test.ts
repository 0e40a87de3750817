import { appendFileSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { cgroupAvailable, createLocal, scratchDir } from './helpers.js'
import { busyLoops, describe as describePids, type Escape, killSurvivors, stressTree, survivors } from './stress.js'

/**
 * Containment under stress (issue 19): trees that fork as fast as they can, with setsid and
 * double-fork escapees and processes inside execve at every moment, ignoring SIGTERM, are killed
 * (task kill, foreground timeout, disposal, in turn) while the test keeps the CPU busy; nothing
 * may survive. A few kills per strategy in CI; `DSH_BASH_STRESS_KILLS=<n>` runs n per strategy
 * (a soak: e.g. 200 for the acceptance run of issue 19; `-t 'stress: marker'` picks one strategy).
 */
const KILLS = Number(process.env.DSH_BASH_STRESS_KILLS ?? 3)
// Time limits: about 3 s per kill and 0.5 s per in-flight command on the 2-core VM at rest; at a
// load average above 20 (other suites beside a 200-kill soak) a marker-mode kill of these trees took
// up to 30 s (every /proc scan is slow then): the limits allow that, a survivor is what fails.
/** `DSH_BASH_STRESS_LOG=<file>`: one line per kill appended there, to follow a soak while it runs. */
const progress = (line: string) => {
  if (process.env.DSH_BASH_STRESS_LOG) appendFileSync(process.env.DSH_BASH_STRESS_LOG, `${new Date().toISOString()} ${line}\n`)
}
/** Commands whose shell exits while its escapees are inside execve (below); `DSH_BASH_STRESS_EXITS=<n>` for a soak. */
const EXITS = Number(process.env.DSH_BASH_STRESS_EXITS ?? 10)
const dir = scratchDir()
const load = busyLoops(2)
afterAll(() => {
  load.stop()
  dir.remove()
})

const strategies: { containment: 'cgroup' | 'marker' | 'pgroup'; escape: Escape }[] = [
  ...(cgroupAvailable() ? [{ containment: 'cgroup' as const, escape: 'setsid' as const }] : []),
  { containment: 'marker', escape: 'setsid' },
  // The process group cannot follow a process that left it once its parent is gone (README): its tree stays in the group.
  { containment: 'pgroup', escape: 'in-group' },
]
const ways = ['kill', 'timeout', 'dispose'] as const

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

for (const { containment, escape } of strategies) {
  describe(`containment under stress: ${containment}`, () => {
    it(`${KILLS} kills of fork-heavy ${escape} trees leave no survivor`, { timeout: 120_000 + KILLS * 30_000 }, async () => {
      const report: string[] = []
      let total = 0
      for (let round = 0; round < KILLS; round++) {
        const tag = `${process.pid}${round}${Math.floor(Math.random() * 1e6)}`
        const way = ways[round % ways.length]
        const instance = await createLocal({ containment, graceMs: 100, cwd: dir.path })
        const bash = instance.executor
        try {
          if (way === 'timeout') {
            const result = await bash.run(bash.resolve({ command: stressTree(tag, escape), timeoutMs: 400 }))
            expect(result.timedOut).toBe(true)
          } else {
            const task = bash.start(bash.resolve({ command: stressTree(tag, escape) }))
            // Let it grow: the loops fork for a while before the kill.
            for (let i = 0; i < 200 && !bash.readOutput(task.id).delta.includes('started'); i++) await sleep(10)
            await sleep(150 + Math.random() * 200)
            if (way === 'kill') expect(await bash.kill(task.id)).toBe(true)
            else await instance.dispose()
            expect(task.status).toBe('killed')
          }
        } finally {
          await instance.dispose()
        }
        // Right after the kill resolved, and once more a little later (a process forked but not yet visible would show up then).
        let left = await survivors(tag)
        if (left.length === 0) {
          await sleep(100)
          left = await survivors(tag)
        }
        progress(`${containment} round ${round + 1}/${KILLS} (${way}): ${left.length} survivor(s)`)
        if (left.length > 0) {
          total += left.length
          report.push(`round ${round} (${way}): ${left.length} survivor(s)\n${describePids(left.slice(0, 10))}`)
          await killSurvivors(tag)
        }
      }
      if (report.length > 0) console.log(`[stress ${containment}] ${report.join('\n')}`)
      expect(total).toBe(0)
    })
  })
}

/**
 * The race of issue 19 made likely: the shell exits at the very moment its escapee passes through
 * `setsid` → `sh` → `sleep` (three execs), which is when the executor looks for leftovers
 * (foreground) or decides that a task is over (background). A look that missed the escapee inside
 * execve counted no leftover (and stopped nothing), or ended the task with the escapee alive.
 */
for (const { containment, escape } of strategies) {
  describe(`leftovers in flight as the shell exits: ${containment}`, () => {
    it(`${EXITS} commands: every escapee is counted and stopped, no task ends while one lives`, { timeout: 120_000 + EXITS * 8_000 }, async () => {
      const sid = escape === 'setsid' ? 'setsid ' : ''
      const instance = await createLocal({ containment, graceMs: 100, cwd: dir.path })
      const bash = instance.executor
      const problems: string[] = []
      try {
        for (let round = 0; round < EXITS; round++) {
          const tag = `${process.pid}${round}${Math.floor(Math.random() * 1e6)}`
          // Each escapee replaces itself 40 times before it settles as `sleep`: inside execve again
          // and again while the executor looks for leftovers or for the task's end.
          const chain = `n=$1; [ "$n" -lt 40 ] && exec bash --noprofile --norc -c "$BASH_EXECUTION_STRING" chain $((n + 1)) 1000.${tag}; exec sleep 1000.${tag}`
          const escapee = `${sid}bash --noprofile --norc -c '${chain}' chain 0 1000.${tag}`
          const command = `${escapee} & (${escapee} &); exit 0`
          if (round % 2 === 0) {
            const result = await bash.run(bash.resolve({ command, timeoutMs: 30_000 }))
            if (result.leftoverProcesses < 2) problems.push(`round ${round}: foreground counted ${result.leftoverProcesses} leftover(s) of 2`)
          } else {
            const task = bash.start(bash.resolve({ command }))
            const ended = await Promise.race([task.done.then(() => true), sleep(600).then(() => false)])
            if (ended) {
              const alive = await survivors(tag)
              problems.push(`round ${round}: the task ended (${task.status}) with ${alive.length} escapee(s) alive`)
            } else {
              await bash.kill(task.id)
            }
          }
          const left = await survivors(tag)
          if (left.length > 0) {
            problems.push(`round ${round}: ${left.length} survivor(s)\n${describePids(left)}`)
            await killSurvivors(tag)
          }
        }
      } finally {
        await instance.dispose()
      }
      if (problems.length > 0) console.log(`[in flight ${containment}] ${problems.join('\n')}`)
      expect(problems).toEqual([])
    })
  })
}
