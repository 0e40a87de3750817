/**
 * The agent over a local pipe (the binary spawned here): the reference transport of the protocol
 * suite, and the checks that only a local run can make (the shipped binaries are the build of the
 * sources, the cgroup path, the pod lifeline).
 */
import { spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { describe, expect, it } from 'vitest'
import { AGENT_ARCHES, type AgentStream, findAgentBinary } from '../src/index.js'
import { agentProtocolSuite, FrameClient, processesWith, SUITE_SECRET_RULES } from './protocol-suite.js'

const binary = findAgentBinary(process.arch === 'arm64' ? 'arm64' : 'x64')
const NS_LAST_PID = '/proc/sys/kernel/ns_last_pid'
const canChoosePids = (() => {
  try {
    writeFileSync(NS_LAST_PID, readFileSync(NS_LAST_PID, 'utf8').trim())
    return true
  } catch {
    return false
  }
})()

/** Spawns the binary (through `runner`, an emulator) with `args`; its stdio as an AgentStream. */
function spawnAgent(args: string[], env: Record<string, string> = {}, path = binary!.path, runner?: string): AgentStream {
  const child = spawn(runner ?? path, runner ? [path, ...args] : args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } })
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()))
  child.stdin.on('error', () => {})
  return { stdin: child.stdin, stdout: child.stdout, stderr: child.stderr, closed, destroy: () => child.kill('SIGKILL') }
}

/** True when a serving agent here announces `cgroup` in its hello. */
function canUseCgroups(): boolean {
  if (process.getuid?.() !== 0) return false
  const out = spawnSync(binary!.path, ['serve', 'bash'], { input: '', encoding: 'utf8', timeout: 10_000 })
  return / cgroup$/.test(out.stdout)
}

function runMode(args: string[], path = binary!.path, runner?: string): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(runner ?? path, runner ? [path, ...args] : args, { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    child.once('close', () => resolve(out.trim()))
  })
}

describe.skipIf(!binary || process.platform !== 'linux')('the agent binary, locally', () => {
  const workdir = tmpdir()
  agentProtocolSuite('a local pipe (without cgroups)', () => ({
    workdir,
    env: true,
    // Without cgroups: the scans and the SIGSTOP sweep alone, as in every container and most hosts.
    start: async (options) => spawnAgent(['serve', options?.shell ?? 'bash', ...SUITE_SECRET_RULES], { ...options?.env, DSH_BASH_AGENT_CGROUP: 'off' }),
    kill: (marker, pid, start) => runMode(['kill', marker, String(pid), String(start)]),
    choosePid: canChoosePids ? (pid) => writeFileSync(NS_LAST_PID, String(pid - 1)) : undefined,
    farPid: (pid) => pid,
  }))

  // Where this machine lets the agent make cgroups (root, cgroup v2): each command in its own, the
  // freezer and cgroup.kill on top of the scans.
  const cgroups = canUseCgroups()
  if (cgroups) {
    agentProtocolSuite('a local pipe (with a cgroup per command)', () => ({
      workdir,
      env: true,
      start: async (options) => spawnAgent(['serve', options?.shell ?? 'bash', ...SUITE_SECRET_RULES], options?.env),
      kill: (marker, pid, start) => runMode(['kill', marker, String(pid), String(start)]),
      choosePid: canChoosePids ? (pid) => writeFileSync(NS_LAST_PID, String(pid - 1)) : undefined,
      farPid: (pid) => pid,
    }))
  } else console.log('the agent makes no cgroup here (not root, or no writable cgroup v2): its cgroup path is not tested')

  it.skipIf(!cgroups)('with a cgroup, a process that cleared its environment, left the group and lost its parent is still killed', async () => {
    const client = new FrameClient(spawnAgent(['serve', 'bash']))
    try {
      expect((await client.next('hello', '0')).text).toMatch(/ cgroup$/)
      const tag = `${process.pid}${Date.now() % 100000}`
      client.run('1', `(env -i setsid sleep 100${tag.slice(0, 2)}''${tag.slice(2)} </dev/null >/dev/null 2>&1 &); echo started`, { workdir })
      await client.next('exit', '1')
      // Only its cgroup ties it to the command: no marker, no group, no parent of the command.
      await new Promise((resolve) => setTimeout(resolve, 100))
      expect(processesWith(`100${tag}`)).toHaveLength(1)
      client.send('count', '1')
      expect((await client.next('count', '1')).text).toBe('1')
      client.send('term', '1', '100')
      await client.next('termed', '1')
      expect(processesWith(`100${tag}`)).toEqual([])
    } finally {
      client.stream.stdin.end()
      await client.stream.closed
    }
  })

  // The other architecture's build, run by qemu-user where it is installed (qemu-user-static).
  const arm64 = findAgentBinary('arm64')
  const qemu = process.arch === 'x64' && arm64 && spawnSync('qemu-aarch64-static', ['--version']).status === 0 ? 'qemu-aarch64-static' : undefined
  if (qemu && arm64) {
    agentProtocolSuite('a local pipe, the arm64 build under qemu-aarch64-static', () => ({
      workdir,
      env: true,
      start: async (options) => spawnAgent(['serve', options?.shell ?? 'bash', ...SUITE_SECRET_RULES], { ...options?.env, DSH_BASH_AGENT_CGROUP: 'off' }, arm64.path, qemu),
      kill: (marker, pid, start) => runMode(['kill', marker, String(pid), String(start)], arm64.path, qemu),
      choosePid: canChoosePids ? (pid) => writeFileSync(NS_LAST_PID, String(pid - 1)) : undefined,
      farPid: (pid) => pid,
    }))
  } else console.log(`the arm64 build is not run here: ${arm64 ? 'no qemu-aarch64-static (apt-get install qemu-user-static)' : 'none ships'}`)

  it('every shipped build is the build of native/ (scripts/build-native.sh builds the sources’ hash in)', () => {
    const dir = new URL('../native/', import.meta.url)
    const sources = readdirSync(dir)
      .filter((name) => /\.[ch]$/.test(name))
      .sort()
      .map((name) => readFileSync(new URL(name, dir)))
    const sha = createHash('sha256').update(Buffer.concat(sources)).digest('hex')
    const builds = AGENT_ARCHES.map(findAgentBinary).filter((b) => b !== undefined)
    expect(builds.map((b) => b.arch)).toContain('x64')
    for (const build of builds) expect(build.bytes.includes(Buffer.from(`dsh-bash-agent-source-sha256:${sha}`)), build.arch).toBe(true)
  })

  it('`version` names the protocol and the sources', async () => {
    expect(await runMode(['version'])).toMatch(/^dsh-bash-agent 1 [0-9a-f]{64}$/)
  })
})
