/**
 * The agent's own protocol suite (@deepseek-ai/dsh-bash-agent) over SSH exec channels to a real
 * sshd, as a non-root user whose PATH has neither Perl nor procps (checked here). The agent is
 * installed into the user's cache the way the executor does it, then every agent of the suite is
 * an exec channel of its own running `ssh-serve.sh`.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { PassThrough } from 'node:stream'
import { finished } from 'node:stream/promises'
import ssh2 from 'ssh2'
import { type AgentStream, agentArchOf, agentBinary, SSH_SERVE_SCRIPT, sshServeArgs } from '@deepseek-ai/dsh-bash-agent'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { agentProtocolSuite, SUITE_SECRET_RULES } from '../../bash-agent/test/protocol-suite.js'
import { execText } from '../src/exec-text.js'
import { createSsh, hostEntry } from './helpers.js'
import { makeKeys, type SshdInstance, startSshd, type TestKeys, unavailableReason } from './sshd.js'

const NS_LAST_PID = '/proc/sys/kernel/ns_last_pid'
const skip = unavailableReason()
if (skip) console.warn(`[dsh-bash-ssh] skipping the agent protocol suite over SSH: ${skip}`)

describe.skipIf(skip !== undefined)('the agent over SSH exec channels', () => {
  let keys: TestKeys
  let sshd: SshdInstance
  let client: InstanceType<typeof ssh2.Client>
  const binary = agentBinary(agentArchOf(process.arch)!)

  beforeAll(async () => {
    keys = makeKeys('dshtest7')
    sshd = await startSshd(keys, 'agent-suite')
    // The executor installs the agent into the user's cache on its first command.
    const instance = await createSsh({ cwd: keys.workdir, hosts: [hostEntry(keys, sshd)] })
    await instance.executor.run(instance.executor.resolve({ command: 'true' }))
    await instance.dispose()
    client = new ssh2.Client()
    await new Promise<void>((resolve, reject) => {
      client.once('ready', () => resolve())
      client.once('error', reject)
      client.connect({ host: '127.0.0.1', port: sshd.port, username: keys.user, privateKey: readFileSync(keys.userKeyPath) })
    })
  })
  afterAll(async () => {
    client?.end()
    await sshd?.stop()
    keys?.remove()
  })

  /** One exec channel running `text`; its streams as an AgentStream. */
  function exec(text: string): Promise<AgentStream> {
    return new Promise((resolve, reject) => {
      client.exec(text, (error, channel) => {
        if (error) return reject(error)
        const stdout = new PassThrough()
        const stderr = new PassThrough()
        channel.pipe(stdout)
        channel.stderr.pipe(stderr)
        const closed = new Promise<void>((done) => channel.once('close', () => done()))
        channel.on('error', () => {})
        const stream: AgentStream & { code?: unknown } = { stdin: channel, stdout, stderr, closed, destroy: () => channel.close() }
        channel.once('exit', (code: unknown, signal: unknown) => (stream.code = signal ?? code))
        resolve(stream)
      })
    })
  }

  /** What `text` printed; its stderr goes into the error when it printed nothing at all. */
  async function output(text: string): Promise<string> {
    const stream = await exec(text)
    let out = ''
    let err = ''
    stream.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    stream.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()))
    stream.stdin.end()
    // The output read to its end, not only the channel closed (the close can come first).
    await Promise.all([stream.closed, finished(stream.stdout)])
    if (out === '') throw new Error(`${text}: nothing on stdout (exit ${(stream as AgentStream & { code?: unknown }).code}); stderr: ${JSON.stringify(err)}`)
    return out.trim()
  }

  it("the user's PATH has neither Perl nor procps; the agent is in the user's cache, private", async () => {
    expect(await output('command -v perl ps pgrep pkill; command -v bash sha256sum | wc -l')).toBe('2')
    expect(await output(`stat -c '%a %U' "$HOME/.cache/dsh-bash" "$HOME/.cache/dsh-bash/agent-${binary.sha256}"`)).toBe(`700 ${keys.user}\n500 ${keys.user}`)
  })

  agentProtocolSuite('an SSH exec channel (no Perl, no procps in PATH)', () => ({
    workdir: keys.workdir,
    env: false,
    start: (options) => exec(execText('bash', SSH_SERVE_SCRIPT, 'dsh-bash-agent', sshServeArgs(options?.shell ?? 'bash', SUITE_SECRET_RULES))),
    kill: (marker, pid, start) => output(`exec "$HOME/.cache/dsh-bash/agent-${binary.sha256}" kill ${marker} ${pid} ${start}`),
    choosePid: process.getuid?.() === 0 ? (pid) => writeFileSync(NS_LAST_PID, String(pid - 1)) : undefined,
    farPid: (pid) => pid,
  }))
})
