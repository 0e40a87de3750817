/**
 * A command's process group number, once its group has ended, may be taken by a stranger's new
 * session in the same container (the agent starts every command with setsid; pids wrap in a
 * long-lived container under fork-heavy builds). The agent and the second-channel kill must never
 * count or signal that stranger as the old command's.
 *
 * The reuse is made for real inside the container's pid namespace: /proc/sys is read-only in the
 * container, so the test (root on the host) enters only the container's pid namespace with
 * `nsenter -p` and writes N-1 to the host's /proc/sys/kernel/ns_last_pid, which acts on the writer's
 * pid namespace: the container's next fork gets pid N.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { describe, expect, it, vi } from 'vitest'
import { agentBinary, agentArchOf, containerAgentPath } from '@deepseek-ai/dsh-bash-agent'
import { ContainerExecutor } from '../src/index.js'
import { containerFixture, ENGINE_URL, processesWith, splitTag, unavailableReason } from './docker.js'

const q = splitTag

function whyNot(): string | undefined {
  const docker = unavailableReason()
  if (docker) return docker
  if (process.getuid?.() !== 0) return 'not root: cannot enter the container’s pid namespace to choose a pid'
  if (!ENGINE_URL.startsWith('unix://')) return `the engine ${ENGINE_URL} is not on this machine: its containers’ pid namespaces cannot be entered`
  if (spawnSync('nsenter', ['--version']).status !== 0) return 'no nsenter (util-linux)'
  return undefined
}
const skip = whyNot()
if (skip) console.warn(`[dsh-bash-container] skipping the group number reuse tests: ${skip}`)

describe.skipIf(skip !== undefined)('container executor: a group number taken by a stranger after the group ended', () => {
  const { create } = containerFixture('container-group')

  /** The first line a task prints (reads are deltas: they are accumulated). */
  async function firstLine(bash: ContainerExecutor, id: string): Promise<string> {
    let text = ''
    await vi.waitFor(
      () => {
        text += bash.readOutput(id).delta
        expect(text).toMatch(/\n/)
      },
      { timeout: 20_000, interval: 20 },
    )
    return text.split('\n')[0]
  }

  /** The host pid of the container's PID 1: its pid namespace is the container's. */
  async function namespaceHolder(bash: ContainerExecutor, owner: string): Promise<string> {
    const id = (await bash.containerOf(owner))!
    return execFileSync('docker', ['inspect', '-f', '{{.State.Pid}}', id], { encoding: 'utf8' }).trim()
  }

  /**
   * A background task of `owner` (the same container) that the agent starts with pid `pid` inside
   * the container, in a session of its own and without the old command's marker: the stranger.
   * Retried while the number is not free yet (the old leader not reaped, another fork first).
   */
  async function strangerWithPid(bash: ContainerExecutor, owner: string, pid: number, tag: string) {
    const holder = await namespaceHolder(bash, owner)
    for (let attempt = 0; attempt < 50; attempt++) {
      execFileSync('nsenter', ['-t', holder, '-p', '--', 'sh', '-c', `echo ${pid - 1} > /proc/sys/kernel/ns_last_pid`])
      const task = bash.start(bash.resolve({ command: `echo $$; exec sleep 700${q(tag)}`, owner }))
      if (Number(await firstLine(bash, task.id)) === pid) return task
      await bash.kill(task.id)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    throw new Error(`no process of the container got pid ${pid} in 50 attempts`)
  }

  it('killing a task whose group ended kills its escapee and leaves the stranger that took the group number running', async () => {
    const bash = await create()
    const tag = `${process.pid}${Date.now() % 100000}`
    const strangerTag = `${Number(tag) + 1}`
    // The shell (the leader: pid == group id) prints its pid, leaves an escapee in a session of its
    // own (with the marker) and exits: the group is empty, the task runs on for the escapee.
    const task = bash.start(bash.resolve({ command: `echo $$; setsid sleep 600${q(tag)} </dev/null >/dev/null 2>&1 & exit 0`, owner: 'o' }))
    const leader = Number(await firstLine(bash, task.id))
    expect(leader).toBeGreaterThan(1)
    await vi.waitFor(() => expect(processesWith(`600${tag}`)).toHaveLength(1), { timeout: 20_000, interval: 20 })
    const stranger = await strangerWithPid(bash, 'o', leader, strangerTag)
    // The task's wait for its processes did not take the stranger as its own either: it still
    // runs for its escapee only (checked by the kill below), and the stranger is its own task.
    expect(bash.get(task.id)!.status).toBe('running')
    expect(await bash.kill(task.id)).toBe(true)
    expect((await bash.get(task.id)!.done).status).toBe('killed')
    expect(processesWith(`600${tag}`)).toEqual([])
    expect(processesWith(`700${strangerTag}`)).toHaveLength(1)
    expect(bash.get(stranger.id)!.status).toBe('running')
    expect(await bash.kill(stranger.id)).toBe(true)
    expect(processesWith(`700${strangerTag}`)).toEqual([])
  })

  it('a task whose group ended is over when its escapee ends, though a stranger holds the group number', async () => {
    const bash = await create()
    const tag = `${process.pid}${Date.now() % 100000}`
    const strangerTag = `${Number(tag) + 1}`
    const task = bash.start(bash.resolve({ command: `echo $$; setsid sleep 600${q(tag)} </dev/null >/dev/null 2>&1 & exit 0`, owner: 'o' }))
    const leader = Number(await firstLine(bash, task.id))
    await vi.waitFor(() => expect(processesWith(`600${tag}`)).toHaveLength(1), { timeout: 20_000, interval: 20 })
    const stranger = await strangerWithPid(bash, 'o', leader, strangerTag)
    // The escapee ends by itself (killed from the host): nothing of the task is left.
    process.kill(processesWith(`600${tag}`)[0], 'SIGKILL')
    await vi.waitFor(() => expect(bash.get(task.id)!.status).not.toBe('running'), { timeout: 10_000, interval: 50 })
    expect(bash.get(task.id)!.status).toBe('completed')
    expect(bash.get(stranger.id)!.status).toBe('running')
    expect(processesWith(`700${strangerTag}`)).toHaveLength(1)
    expect(await bash.kill(stranger.id)).toBe(true)
  })

  it('the second-channel kill (the agent\'s kill mode) matches the group only while its leader is there: a stranger with the number lives', async () => {
    const bash = await create()
    const tag = `${process.pid}${Date.now() % 100000}`
    const strangerTag = `${Number(tag) + 1}`
    await bash.run(bash.resolve({ command: 'true', owner: 'k' }))
    const id = (await bash.containerOf('k'))!
    const killScript = (marker: string, pid: number, start: string) =>
      execFileSync('docker', ['exec', id, containerAgentPath(agentBinary(agentArchOf(process.arch)!)), 'kill', marker, String(pid), start], { encoding: 'utf8' }).trim()
    // Read from the host (same kernel; the container's processes are visible here under host pids).
    const markerOf = (hostPid: number) =>
      readFileSync(`/proc/${hostPid}/environ`, 'utf8')
        .split('\0')
        .find((entry) => entry.startsWith('DSH_BASH_TASK='))!
        .slice('DSH_BASH_TASK='.length)
    const parentOf = (hostPid: number) => {
      const stat = readFileSync(`/proc/${hostPid}/stat`, 'utf8')
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    }
    // Prints `<pid> <start time>` of the shell, the leader (stat field 22; comm "bash" has no space).
    const leaderFacts = `echo $$ $(cut -d' ' -f22 /proc/$$/stat)`

    // While the leader is there, the group is matched: a member that dropped the marker is killed.
    const alive = bash.start(bash.resolve({ command: `${leaderFacts}; env -u DSH_BASH_TASK sleep 800${q(tag)} & wait`, owner: 'k' }))
    const [alivePid, aliveStart] = (await firstLine(bash, alive.id)).split(' ')
    await vi.waitFor(() => expect(processesWith(`800${tag}`)).toHaveLength(1), { timeout: 20_000, interval: 20 })
    // The member has no marker; its parent, the leader, has.
    const aliveMarker = markerOf(parentOf(processesWith(`800${tag}`)[0]))
    expect(Number(killScript(aliveMarker, Number(alivePid), aliveStart))).toBeGreaterThanOrEqual(2)
    expect(processesWith(`800${tag}`)).toEqual([])
    expect((await bash.get(alive.id)!.done).status).not.toBe('running')

    // The leader is gone and a stranger has its number: only the marker is matched.
    const task = bash.start(bash.resolve({ command: `${leaderFacts}; setsid sleep 600${q(tag)} </dev/null >/dev/null 2>&1 & exit 0`, owner: 'k' }))
    const [leader, start] = (await firstLine(bash, task.id)).split(' ')
    await vi.waitFor(() => expect(processesWith(`600${tag}`)).toHaveLength(1), { timeout: 20_000, interval: 20 })
    const marker = markerOf(processesWith(`600${tag}`)[0])
    const stranger = await strangerWithPid(bash, 'k', Number(leader), strangerTag)
    expect(killScript(marker, Number(leader), start)).toBe('1')
    expect(processesWith(`600${tag}`)).toEqual([])
    expect(processesWith(`700${strangerTag}`)).toHaveLength(1)
    expect(bash.get(stranger.id)!.status).toBe('running')
    await bash.kill(stranger.id)
    await bash.kill(task.id)
  })
})
