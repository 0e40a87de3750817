/**
 * A command's process group number, once its group is empty, can be reused by a stranger's new
 * session (another dsh session of the same remote user, the user's own shell). The agent must then
 * neither count nor signal the stranger (the group claim, packages/bash-agent/native/proc.c).
 * The reuse is real: as root, writing N-1 to /proc/sys/kernel/ns_last_pid gives the next fork pid N.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { recordLogs } from '@deepseek-ai/dsh-bash'
import { uniqueMarker } from '@deepseek-ai/dsh-bash/conformance'
import { createSsh, hostEntry, type SshInstance, stateOf } from './helpers.js'
import { makeKeys, type SshdInstance, startSshd, type TestKeys, unavailableReason, userProcesses } from './sshd.js'

const NS_LAST_PID = '/proc/sys/kernel/ns_last_pid'
/** A user of its own: the other files check that their users have no process left. */
const USER = 'dshtest5'
const WAIT = { timeout: 30_000, interval: 50 }

/** Why a pid cannot be handed out on purpose here, or undefined when it can. */
function pidReuseUnavailable(): string | undefined {
  try {
    writeFileSync(NS_LAST_PID, readFileSync(NS_LAST_PID, 'utf8').trim())
    return undefined
  } catch (error) {
    return `${NS_LAST_PID} is not writable (${(error as Error).message}): a pid cannot be reused on purpose`
  }
}

const skip = unavailableReason() ?? pidReuseUnavailable()
if (skip) console.warn(`[dsh-bash-ssh] skipping the reused process group tests: ${skip}`)

/** `pid pgid sid` of a process (from /proc/<pid>/stat). */
function idsOf(pid: number): number[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return [pid, Number(fields[2]), Number(fields[3])]
}

/**
 * Spawns `args` as `uid`/`gid` in a new session (`detached`: setsid) with pid `pid`: ns_last_pid is
 * set to pid-1 right before the fork. Other forks on the machine may take the number first: retried.
 */
/** The number went to another fork of the machine first (a busy machine, e.g. the full suite in CI): try another. */
class PidTaken extends Error {}

async function spawnWithPid(pid: number, uid: number, gid: number, args: string[]): Promise<ChildProcess> {
  for (let attempt = 0; attempt < 200; attempt++) {
    if (existsSync(`/proc/${pid}`)) throw new PidTaken(`pid ${pid} is taken by another process: the test cannot reuse it`)
    writeFileSync(NS_LAST_PID, String(pid - 1))
    const child = spawn(args[0], args.slice(1), { uid, gid, detached: true, stdio: 'ignore' })
    if (child.pid === pid) return child
    const gone = new Promise((resolve) => child.once('exit', resolve))
    // The whole group (detached: its own session): a shell that already forked its child leaves none.
    try {
      process.kill(-child.pid!, 'SIGKILL')
    } catch {
      child.kill('SIGKILL')
    }
    await gone
  }
  throw new PidTaken(`could not get pid ${pid} for the stranger in 200 attempts (the machine forks too much)`)
}

describe.skipIf(skip !== undefined)('a reused process group number (the group claim)', () => {
  let keys: TestKeys
  let sshd: SshdInstance
  let uid = 0
  let gid = 0
  const instances: SshInstance[] = []
  /** The strangers' pids, killed at the end of each test (never by the executor, that is the point). */
  const strangers: number[] = []

  beforeAll(async () => {
    keys = makeKeys(USER)
    uid = Number(execFileSync('id', ['-u', USER], { encoding: 'utf8' }).trim())
    gid = Number(execFileSync('id', ['-g', USER], { encoding: 'utf8' }).trim())
    sshd = await startSshd(keys, 'reuse')
  })

  afterAll(async () => {
    try {
      for (const instance of instances) await instance.dispose()
      if (keys) await vi.waitFor(() => expect(userProcesses(USER)).toEqual([]), WAIT)
    } finally {
      await sshd?.stop()
      keys?.remove()
    }
  })

  function killStrangers(): void {
    for (const pid of strangers.splice(0)) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // Gone (the test failed that way).
      }
    }
  }

  /**
   * A task whose shell (the group's leader) exits at once while an escapee carrying its marker runs
   * on (`setsid`: a session of its own); waits until the remote agent has scanned with the group
   * empty (a report naming only the escapee). Returns the task, the old pgid and the escapee's pid.
   */
  async function taskWithEmptyGroup(logs: ReturnType<typeof recordLogs>) {
    const instance = await createSsh({ cwd: keys.workdir, hosts: [hostEntry(keys, sshd)], waitReportMs: 200 })
    instances.push(instance)
    const bash = instance.executor
    const m = uniqueMarker()
    const task = bash.start(bash.resolve({ command: `echo $$; setsid sleep 1000.${m} & exit 0` }))
    let output = ''
    await vi.waitFor(() => {
      output += bash.readOutput(task.id).delta
      expect(output).toMatch(/^\d+\n$/)
    }, WAIT)
    const pgid = Number(output.trim())
    await vi.waitFor(() => expect(userProcesses(USER, `sleep 1000.${m}`)).toHaveLength(1), WAIT)
    const escapee = Number(userProcesses(USER, `sleep 1000.${m}`)[0].split(' ')[0])
    // The escapee left the group: the group is empty once the shell is gone.
    expect(idsOf(escapee)[1]).toBe(escapee)
    const reported = () =>
      logs.lines.some((line) => line.content.startsWith(`${task.id} (remote pid ${pgid}) `) && line.content.endsWith(`${escapee} sleep (state S, outside the group, carrying its marker)`))
    await vi.waitFor(() => expect(reported()).toBe(true), WAIT)
    // Another fork of a busy machine (another test choosing pids) took the number already: a new round.
    if (existsSync(`/proc/${pgid}`)) {
      await bash.kill(task.id)
      throw new PidTaken(`pid ${pgid} was taken before the stranger could be made`)
    }
    expect(task.status).toBe('running')
    return { bash, task, pgid, escapee, m }
  }

  /**
   * `taskWithEmptyGroup`, then `make` a stranger with its old group number; when another fork of the
   * machine took that number first (CI 2026-12-03, the full suite running beside), that round's task
   * is killed and a new one tried, up to five.
   */
  async function taskAndStranger(logs: ReturnType<typeof recordLogs>, make: (pgid: number, tag: string) => Promise<number>) {
    for (let round = 1; ; round++) {
      let setup: Awaited<ReturnType<typeof taskWithEmptyGroup>> | undefined
      const tag = uniqueMarker()
      try {
        setup = await taskWithEmptyGroup(logs)
        return { ...setup, tag, stranger: await make(setup.pgid, tag) }
      } catch (error) {
        if (!(error instanceof PidTaken) || round === 5) throw error
        if (setup) await setup.bash.kill(setup.task.id)
      }
    }
  }

  const scenarios = [
    {
      name: 'the stranger leads its own session with that number',
      stranger: async (pgid: number, tag: string) => {
        await spawnWithPid(pgid, uid, gid, ['sleep', `1000.${tag}`])
        strangers.push(pgid)
        return pgid
      },
    },
    {
      name: "the stranger's leader exited, its child still in the group",
      stranger: async (pgid: number, tag: string) => {
        const leader = await spawnWithPid(pgid, uid, gid, ['bash', '--noprofile', '--norc', '-c', `sleep 1000.${tag} >/dev/null 2>&1 & exit 0`])
        if (leader.exitCode === null && leader.signalCode === null) await new Promise((resolve) => leader.once('exit', resolve))
        await vi.waitFor(() => expect(userProcesses(USER, `sleep 1000.${tag}`)).toHaveLength(1), WAIT)
        const child = Number(userProcesses(USER, `sleep 1000.${tag}`)[0].split(' ')[0])
        strangers.push(child)
        // Node reaped the leader: the group's number is held by the child alone.
        expect(existsSync(`/proc/${pgid}`)).toBe(false)
        return child
      },
    },
  ]

  for (const scenario of scenarios) {
    it(`${scenario.name}: a kill of the task kills its escapee and leaves the stranger alone`, async () => {
      const logs = recordLogs()
      try {
        const { bash, task, pgid, escapee, tag, stranger } = await taskAndStranger(logs, scenario.stranger)
        const [, strangerGroup, strangerSession] = idsOf(stranger)
        expect([strangerGroup, strangerSession]).toEqual([pgid, pgid])
        expect(await bash.kill(task.id)).toBe(true)
        expect(task.status).toBe('killed')
        // Dead (a zombie until init reaps it).
        expect(stateOf(escapee) ?? 'Z').toBe('Z')
        // The stranger was neither killed nor left stopped.
        expect(stateOf(stranger)).toMatch(/^[RSD]$/)
        expect(userProcesses(USER, `sleep 1000.${tag}`)).toHaveLength(1)
      } finally {
        logs.stop()
        killStrangers()
      }
    })
  }

  it('the stranger is not counted: the task ends once its escapee is gone', async () => {
    const logs = recordLogs()
    try {
      const { task, escapee, stranger } = await taskAndStranger(logs, scenarios[0].stranger)
      process.kill(escapee, 'SIGKILL')
      await vi.waitFor(() => expect(task.status).toBe('completed'), { timeout: 15_000, interval: 50 })
      expect(stateOf(stranger)).toMatch(/^[RSD]$/)
    } finally {
      logs.stop()
      killStrangers()
    }
  })
})
