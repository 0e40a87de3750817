import { afterAll, beforeAll, describe, expect, it } from 'vitest'
// The trees and the CPU load of bash-local's containment stress test: the remote sweep must meet the same bar.
import { busyLoops, stressTree } from '../../bash-local/test/stress.js'
import { createSsh, hostEntry } from './helpers.js'
import { makeKeys, type SshdInstance, startSshd, type TestKeys, unavailableReason, userProcesses } from './sshd.js'

const skip = unavailableReason()
if (skip) console.warn(`[dsh-bash-ssh] skipping the remote sweep stress test: ${skip}`)

/** Kills per run: a few in CI; `DSH_BASH_STRESS_KILLS=<n>` for a soak (as in bash-local). */
const KILLS = Number(process.env.DSH_BASH_STRESS_KILLS ?? 3)
const ways = ['kill', 'timeout', 'dispose'] as const
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe.skipIf(skip !== undefined)('ssh executor: the remote sweep under stress', () => {
  let keys: TestKeys
  let sshd: SshdInstance
  const load = busyLoops(2)
  if (!skip) {
    // A user of its own: the other test files check for their users' processes.
    keys = makeKeys('dshtest3')
    beforeAll(async () => {
      sshd = await startSshd(keys, 'stress')
    })
    afterAll(async () => {
      load.stop()
      await sshd?.stop()
      keys.remove()
    })
  } else {
    afterAll(() => load.stop())
  }

  it(`${KILLS} kills of fork-heavy setsid trees leave no remote survivor`, { timeout: 60_000 + KILLS * 15_000 }, async () => {
    const report: string[] = []
    for (let round = 0; round < KILLS; round++) {
      const tag = `${process.pid}${round}${Math.floor(Math.random() * 1e6)}`
      const way = ways[round % ways.length]
      const instance = await createSsh({ cwd: keys.workdir, hosts: [hostEntry(keys, sshd)], graceMs: 100 })
      const bash = instance.executor
      try {
        if (way === 'timeout') {
          const result = await bash.run(bash.resolve({ command: stressTree(tag, 'setsid', 60), timeoutMs: 1_500 }))
          expect(result.timedOut).toBe(true)
        } else {
          const task = bash.start(bash.resolve({ command: stressTree(tag, 'setsid', 60) }))
          for (let i = 0; i < 500 && !bash.readOutput(task.id).delta.includes('started'); i++) await sleep(10)
          await sleep(300)
          if (way === 'kill') expect(await bash.kill(task.id)).toBe(true)
          else await instance.dispose()
          expect(task.status).toBe('killed')
        }
      } finally {
        await instance.dispose()
      }
      let left = userProcesses(keys.user, `1000.${tag}`)
      if (left.length === 0) {
        await sleep(100)
        left = userProcesses(keys.user, `1000.${tag}`)
      }
      if (left.length > 0) report.push(`round ${round} (${way}): ${left.length} survivor(s)\n${left.slice(0, 10).join('\n')}`)
    }
    if (report.length > 0) console.log(`[stress ssh] ${report.join('\n')}`)
    expect(report).toEqual([])
  })
})
