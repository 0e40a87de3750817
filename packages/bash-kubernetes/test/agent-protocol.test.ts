/**
 * The agent's own protocol suite (@deepseek-ai/dsh-bash-agent) over `pods/exec` WebSockets of the
 * fake API server (real Docker containers of the test image: no Perl, no procps). The pod is made
 * as the executor makes it: PID 1 waits for the agent, one exec installs it (checked by its
 * SHA-256), every agent of the suite is an exec of its own.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { PassThrough } from 'node:stream'
import { CoreV1Api, Exec, KubeConfig } from '@kubernetes/client-node'
import { type AgentStream, INSTALL_SCRIPT, installArgs, POD_AGENT_DIR, runInstall } from '@deepseek-ai/dsh-bash-agent'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { agentProtocolSuite, SUITE_SECRET_RULES } from '../../bash-agent/test/protocol-suite.js'
import { buildPod } from '../src/index.js'
import { type FakeApiServer, startFakeApiServer } from './fake-apiserver.js'
import { ENGINE_URL, TEST_IMAGE, unavailableReason } from './docker.js'

const skip = unavailableReason()
if (skip) console.warn(`[dsh-bash-kubernetes] skipping the agent protocol suite over pods/exec: ${skip}`)
const root = process.getuid?.() === 0 && spawnSync('nsenter', ['--version']).status === 0

describe.skipIf(skip !== undefined)('the agent over pods/exec (fake API server)', () => {
  let fake: FakeApiServer
  let kc: KubeConfig
  let agentPath = ''
  let holder = ''
  const name = `dsh-bash-agent-suite-${process.pid}`

  /** One exec in the pod; its channels as an AgentStream (stdin: channel 0). */
  async function exec(command: string[]): Promise<AgentStream> {
    const stdin = new PassThrough()
    const stdout = new PassThrough()
    const stderr = new PassThrough()
    let resolveClosed!: () => void
    const closed = new Promise<void>((resolve) => (resolveClosed = resolve))
    const ws = (await new Exec(kc).exec('default', name, 'bash', command, stdout, stderr, stdin, false)) as unknown as { on(e: string, f: () => void): void; close(): void }
    ws.on('close', () => {
      stdout.end()
      stderr.end()
      resolveClosed()
    })
    ws.on('error', () => {})
    return { stdin, stdout, stderr, closed, destroy: () => ws.close() }
  }

  beforeAll(async () => {
    fake = await startFakeApiServer({ engineUrl: ENGINE_URL })
    kc = new KubeConfig()
    kc.loadFromFile(fake.kubeconfigPath)
    const api = kc.makeApiClient(CoreV1Api)
    const { pod } = buildPod(undefined, {
      name,
      namespace: 'default',
      image: TEST_IMAGE,
      limits: {},
      env: {},
      labels: {},
      annotations: {},
      mountPath: '/workspace',
      // PID 1 never gives up on the agent: the suite's agents come and go.
      lifeline: { firstSeconds: 60, goneSeconds: 0 },
    })
    await api.createNamespacedPod({ namespace: 'default', body: pod })
    for (let i = 0; i < 200; i++) {
      const status = (await api.readNamespacedPod({ name, namespace: 'default' })).status
      if (status?.phase === 'Running') break
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    agentPath = await runInstall(await exec(['bash', '--noprofile', '--norc', '-c', INSTALL_SCRIPT, 'install', ...installArgs(POD_AGENT_DIR)]), name)
    holder = execFileSync('docker', ['inspect', '-f', '{{.State.Pid}}', fake.pods.get(`default/${name}`)!.containerId!], { encoding: 'utf8' }).trim()
  })
  afterAll(async () => {
    await fake?.close()
  })

  it('the agent was installed into the pod user\'s private directory, whole', () => {
    expect(agentPath).toMatch(/^\/\.dsh-bash\/\d+\/agent-[0-9a-f]{64}$/)
    const mode = execFileSync('docker', ['exec', fake.pods.get(`default/${name}`)!.containerId!, 'stat', '-c', '%a', agentPath, agentPath.replace(/\/agent-[^/]+$/, '')], { encoding: 'utf8' })
    expect(mode.trim().split('\n')).toEqual(['500', '700'])
  })

  agentProtocolSuite('pods/exec (fake API server, no Perl, no procps)', () => ({
    workdir: '/tmp',
    env: false,
    start: (options) => exec([agentPath, 'serve', options?.shell ?? 'bash', ...SUITE_SECRET_RULES]),
    kill: async (marker, pid, start) => {
      const stream = await exec([agentPath, 'kill', marker, String(pid), String(start)])
      let out = ''
      stream.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
      await stream.closed
      return out.trim()
    },
    choosePid: root ? (pid) => execFileSync('nsenter', ['-t', holder, '-p', '--', 'sh', '-c', `echo ${pid - 1} > /proc/sys/kernel/ns_last_pid`]) : undefined,
    farPid: (hostPid) => Number(/^NSpid:.*\s(\d+)$/m.exec(readFileSync(`/proc/${hostPid}/status`, 'utf8'))![1]),
  }))
})
