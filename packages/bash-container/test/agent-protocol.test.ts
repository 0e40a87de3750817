/**
 * The agent's own protocol suite (@deepseek-ai/dsh-bash-agent) over a Docker exec, in a container
 * of the test image: bash and coreutils, no Perl, no procps (checked here: the suite proves the
 * agent needs neither). The agent goes in as the executor puts it (the archive upload before the
 * start); PID 1 is the agent's own `pod-init` that never exits (no lifeline needed for the suite).
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { Readable } from 'node:stream'
import { agentArchOf, agentBinary, containerAgentArchive, containerAgentPath } from '@deepseek-ai/dsh-bash-agent'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { agentProtocolSuite, SUITE_SECRET_RULES } from '../../bash-agent/test/protocol-suite.js'
import { EngineClient } from '../src/index.js'
import { ENGINE_URL, TEST_IMAGE, unavailableReason } from './docker.js'

const skip = unavailableReason()
if (skip) console.warn(`[dsh-bash-container] skipping the agent protocol suite over a Docker exec: ${skip}`)
const root = process.getuid?.() === 0 && ENGINE_URL.startsWith('unix://') && spawnSync('nsenter', ['--version']).status === 0

describe.skipIf(skip !== undefined)('the agent over a Docker exec', () => {
  const engine = new EngineClient(ENGINE_URL)
  const binary = agentBinary(agentArchOf(process.arch)!)
  const path = containerAgentPath(binary)
  let id = ''
  let holder = ''

  beforeAll(async () => {
    const created = await engine.request<{ Id: string }>('POST', '/containers/create', {
      Image: TEST_IMAGE,
      Entrypoint: [path, 'pod-init', '60', '0', 'unused'],
      Cmd: [],
      User: '1000:1000',
      Labels: { 'dsh-bash.test': `agent-protocol-${process.pid}` },
      HostConfig: { AutoRemove: true, NetworkMode: 'none', CapDrop: ['ALL'], SecurityOpt: ['no-new-privileges'] },
    })
    id = created.Id
    await engine.putArchive(id, '/', Readable.from([containerAgentArchive(binary)]))
    await engine.request('POST', `/containers/${id}/start`)
    holder = execFileSync('docker', ['inspect', '-f', '{{.State.Pid}}', id], { encoding: 'utf8' }).trim()
  })
  afterAll(async () => {
    if (id) await engine.request('DELETE', `/containers/${id}?force=1`).catch(() => undefined)
    engine.close()
  })

  it('the image has bash and coreutils, and neither Perl nor procps', () => {
    const probe = spawnSync('docker', ['exec', id, 'bash', '-c', 'command -v perl ps pkill pgrep; command -v bash sha256sum'], { encoding: 'utf8' })
    expect(probe.stdout.trim().split('\n')).toEqual(['/usr/bin/bash', '/usr/bin/sha256sum'])
  })

  async function exec(cmd: string[], env: Record<string, string> = {}) {
    const made = await engine.request<{ Id: string }>('POST', `/containers/${id}/exec`, {
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      Cmd: cmd,
      Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
    })
    return engine.hijack(`/exec/${made.Id}/start`, { Detach: false, Tty: false })
  }

  agentProtocolSuite('a Docker exec (no Perl, no procps)', () => ({
    workdir: '/tmp',
    env: true,
    start: (options) => exec([path, 'serve', options?.shell ?? 'bash', ...SUITE_SECRET_RULES], options?.env),
    kill: async (marker, pid, start) => {
      const stream = await exec([path, 'kill', marker, String(pid), String(start)])
      stream.stdin.end()
      let out = ''
      stream.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
      await stream.closed
      return out.trim()
    },
    choosePid: root ? (pid) => execFileSync('nsenter', ['-t', holder, '-p', '--', 'sh', '-c', `echo ${pid - 1} > /proc/sys/kernel/ns_last_pid`]) : undefined,
    farPid: (hostPid) => Number(/^NSpid:.*\s(\d+)$/m.exec(readFileSync(`/proc/${hostPid}/status`, 'utf8'))![1]),
  }))
})
