/**
 * The suite checks itself for leaked processes (issue 19). Global setup gives this run an id in
 * `DSH_BASH_TEST_RUN`; the test workers inherit it, and so does every process they start: the
 * executors' commands (the local and sandbox executors pass the environment down; the test sshd
 * sets it in every session with `SetEnv`), test servers, load generators. Other worktrees run
 * their suites on the same machine at the same time: the id tells this run's processes from theirs.
 *
 * Global teardown looks for any live process still carrying this run's id (zombies are not
 * survivors). What it finds is printed, killed (frozen first, so a forking tree cannot outrun it),
 * and fails the run.
 */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { freezeAndKill } from './packages/bash-local/src/exact-kill.ts'
import { TreeScanner } from './packages/bash-local/src/scan.ts'

export const RUN_VARIABLE = 'DSH_BASH_TEST_RUN'

/** How long processes still exiting on their own (a server's last child) get before they count as leaked. */
const SETTLE_MS = 3_000

export default function setup(): () => Promise<void> {
  const run = `${process.pid}-${randomBytes(6).toString('hex')}`
  process.env[RUN_VARIABLE] = run
  return async function teardown() {
    const scanner = new TreeScanner({ env: { name: RUN_VARIABLE, value: run } })
    const leaked = async () => [...(await scanner.settled()).found].filter((pid) => !isVitestWorker(pid))
    let left = await leaked()
    for (const until = performance.now() + SETTLE_MS; left.length > 0 && performance.now() < until; left = await leaked()) {
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    if (left.length === 0) return
    const report = left.map(describeProcess).join('\n')
    await freezeAndKill({
      scan: async () => {
        const scan = await scanner.settled()
        for (const pid of scan.found) if (isVitestWorker(pid)) scan.found.delete(pid)
        return scan
      },
      pgid: 0,
    })
    // vitest reports an error thrown here ("error during close") but exits 0: fail the run explicitly.
    process.exitCode = 1
    throw new Error(
      `${left.length} process(es) of this test run (${RUN_VARIABLE}=${run}) were still alive after the suite; killed now:\n${report}`,
    )
  }
}

/** vitest's own worker processes (children of this process) may still be closing. */
function isVitestWorker(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    return ppid === process.pid && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('vitest')
  } catch {
    return false
  }
}

function describeProcess(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    const [state, ppid, pgid, sid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim()
    const markers = readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .filter((v) => v.startsWith('DSH_BASH_'))
      .join(' ')
    return `  pid ${pid} ppid ${ppid} pgid ${pgid} sid ${sid} state ${state}: ${cmdline} [${markers}]`
  } catch {
    return `  pid ${pid} (gone while reported)`
  }
}
