import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadExecutorPlugin } from '@deepseek-ai/dsh-bash/conformance'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { ContainerExecutor, EngineClient, parseEngineUrl } from '../src/index.js'
import { containersWithLabel, TEST_IMAGE, unavailableReason } from './docker.js'

const SSHD = '/usr/sbin/sshd'

function sshSkipReason(): string | undefined {
  const engine = unavailableReason()
  if (engine) return engine
  if (!existsSync(SSHD)) return `${SSHD} is missing (install openssh-server)`
  if (spawnSync('ssh', ['-V']).error) return 'no ssh client (install openssh-client)'
  if (process.getuid?.() !== 0) return 'the ssh engine test logs in as root through a private sshd (needs root)'
  return undefined
}
const skip = sshSkipReason()
if (skip) console.warn(`[dsh-bash-container] skipping the engine-over-ssh tests: ${skip}`)

describe('ssh:// engine URLs', () => {
  it('parses user, host and port', () => {
    expect(parseEngineUrl('ssh://me@build-1:2222')).toEqual({ kind: 'ssh', user: 'me', host: 'build-1', port: 2222, url: 'ssh://me@build-1:2222' })
    expect(parseEngineUrl('ssh://build-1')).toEqual({ kind: 'ssh', host: 'build-1', url: 'ssh://build-1' })
    expect(() => parseEngineUrl('ssh://me@h:70000')).toThrow(/invalid engine URL/)
  })
})

// Docker's way to reach a remote engine: `ssh host docker system dial-stdio` per connection. Here
// the "remote" is this machine through a private sshd (its own host key, an authorized key for root
// in a temporary file), and the docker CLI on it dials the real engine.
describe.skipIf(skip !== undefined)('the engine over ssh:// (a real sshd, docker system dial-stdio)', () => {
  let dir: string
  let sshd: ChildProcess
  let url: string
  let sshArgs: string[]
  const label = `dsh-bash.test=ssh-${process.pid}`
  const sshChildren = () => spawnSync('pgrep', ['-f', `UserKnownHostsFile=${dir}/known_hosts`], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean)

  beforeAll(async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-engine-ssh-')))
    for (const name of ['host_key', 'client_key']) execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, name)])
    writeFileSync(join(dir, 'authorized_keys'), readFileSync(join(dir, 'client_key.pub')))
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port
        s.close(() => resolve(p))
      })
    })
    writeFileSync(
      join(dir, 'sshd_config'),
      [
        `Port ${port}`,
        'ListenAddress 127.0.0.1',
        `HostKey ${join(dir, 'host_key')}`,
        `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
        'PermitRootLogin prohibit-password',
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'UsePAM no',
        'StrictModes no',
        `PidFile ${join(dir, 'sshd.pid')}`,
      ].join('\n') + '\n',
    )
    mkdirSync('/run/sshd', { recursive: true, mode: 0o755 })
    sshd = spawn(SSHD, ['-D', '-e', '-f', join(dir, 'sshd_config')], { stdio: ['ignore', 'ignore', 'pipe'] })
    await vi.waitFor(
      () =>
        new Promise<void>((resolve, reject) => {
          const c = net.connect(port, '127.0.0.1', () => (c.destroy(), resolve()))
          c.on('error', reject)
        }),
      { timeout: 10_000, interval: 100 },
    )
    writeFileSync(join(dir, 'known_hosts'), `[127.0.0.1]:${port} ${readFileSync(join(dir, 'host_key.pub'), 'utf8')}`)
    sshArgs = ['-F', '/dev/null', '-i', join(dir, 'client_key'), '-o', 'IdentitiesOnly=yes', '-o', `UserKnownHostsFile=${join(dir, 'known_hosts')}`, '-o', 'StrictHostKeyChecking=yes']
    url = `ssh://root@127.0.0.1:${port}`
  })
  afterAll(async () => {
    if (sshd && sshd.exitCode === null) {
      const exited = new Promise((resolve) => sshd.once('exit', resolve))
      sshd.kill()
      await exited
    }
    rmSync(dir, { recursive: true, force: true })
  })

  it('JSON calls over ssh; an unknown host key is refused (never accepted blindly)', async () => {
    const client = new EngineClient(url, undefined, { sshArgs })
    const stranger = new EngineClient(url, undefined, { sshArgs: sshArgs.map((a) => (a.startsWith('UserKnownHostsFile=') ? 'UserKnownHostsFile=/dev/null' : a)) })
    try {
      expect(await client.request('GET', '/_ping')).toBe('OK')
      expect((await client.request<{ ApiVersion: string }>('GET', '/version')).ApiVersion).toMatch(/^\d+\.\d+$/)
      // ssh's own words when its exit is seen first; under load the pipe's close can win the race
      // (then node's "Premature close"): refused either way, never answered.
      await expect(stranger.request('GET', '/_ping')).rejects.toThrow(
        /^cannot reach the container engine at ssh:\/\/root@127\.0\.0\.1:\d+: (ssh to the engine exited with 255: .*Host key verification failed|Premature close)/,
      )
    } finally {
      client.close()
      stranger.close()
    }
    // close() ended the pooled connections' ssh processes.
    await vi.waitFor(() => expect(sshChildren()).toEqual([]), { timeout: 10_000 })
  })

  it('the executor over ssh: create, the lifeline and agent streams through dial-stdio, release and disposal', async () => {
    const workspace = realpathSync(mkdtempSync(join(dir, 'ws-')))
    const instance = await loadExecutorPlugin(ContainerExecutor, { image: TEST_IMAGE, engine: url, sshArgs, workspace, labels: { 'dsh-bash.test': `ssh-${process.pid}` }, sweep: false })
    const bash = instance.executor
    try {
      const r = await bash.run(bash.resolve({ command: 'echo over-ssh; echo err >&2; exit 5', owner: 'a' }))
      expect([r.stdout.text, r.stderr.text, r.exitCode]).toEqual(['over-ssh\n', 'err\n', 5])
      const task = bash.start(bash.resolve({ command: 'sleep 1000', owner: 'a' }))
      expect(await bash.kill(task.id)).toBe(true)
      expect(containersWithLabel(label)).toHaveLength(1)
      await bash.releaseOwner('a')
      expect(containersWithLabel(label)).toEqual([])
    } finally {
      await instance.dispose()
    }
    await vi.waitFor(() => expect(containersWithLabel(label)).toEqual([]), { timeout: 20_000, interval: 100 })
    await vi.waitFor(() => expect(sshChildren()).toEqual([]), { timeout: 10_000 })
  })
})
