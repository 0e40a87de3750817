/**
 * `terminalModes` through the client (launchThroughAgent over an AgentSession) with the agent run
 * on this machine: what `bash_input {ask_user}` asks before it offers a hidden prompt. The
 * transports add only their streams (the protocol suite runs `modes` over each of them).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { codedError, type TerminalModes } from '@deepseek-ai/dsh-bash'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { type AgentErrors, AgentSession, agentArchOf, findAgentBinary, launchThroughAgent } from '../src/index.js'

const binary = findAgentBinary(agentArchOf(process.arch) ?? 'x64')
const WAIT = { timeout: 20_000, interval: 50 }

class LocalAgentSession extends AgentSession {
  private child?: ChildProcess
  constructor() {
    super()
  }
  get shortId(): string {
    return 'local agent'
  }
  get errors(): AgentErrors {
    const fail = (why: string) => codedError('DSH_TEST', why)
    return { agentFailed: fail, lost: fail, workdirMissing: fail, workdirNotDir: fail, workdirNoAccess: fail, spawn: fail, terminalClosed: () => fail('closed') }
  }
  protected lostMessage(): string {
    return 'the local agent is gone'
  }
  async boot(): Promise<void> {
    const child = spawn(binary!.path, ['serve', 'bash'], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, DSH_BASH_AGENT_CGROUP: 'off' } })
    this.child = child
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()))
    await this.startAgent({ stdin: child.stdin!, stdout: child.stdout!, stderr: child.stderr!, closed, destroy: () => child.kill('SIGKILL') })
  }
  protected async destroyBackend(): Promise<void> {
    // Its stdin ending makes the agent kill every command it runs, then exit.
    this.child?.stdin?.end()
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) await new Promise((resolve) => this.child!.once('close', resolve))
  }
}

describe.skipIf(!binary)("the agent reads its terminals' modes", () => {
  let session: LocalAgentSession | undefined
  afterEach(async () => {
    await session?.remove()
    session = undefined
  })

  it('read -s: echo off in line mode; read -e: raw; cat: echo on; a command without a terminal has none', async () => {
    session = new LocalAgentSession()
    await session.boot()
    const spec = (command: string, interactive: boolean) => ({ command, workdir: '/', timeoutMs: 60_000, interactive, env: {} }) as never
    const launched = await launchThroughAgent(session, spec(`read -s -p 'Password: ' p; echo; read -e -p 'Line: ' q; echo; cat`, true), `dsh-test-modes-${process.pid}-1`)
    const modes = (): Promise<TerminalModes | undefined> => launched.terminalModes!()
    await vi.waitFor(async () => expect(await modes()).toEqual({ echo: false, canonical: true }), WAIT)
    await launched.write!(Buffer.from('hidden\n'))
    await vi.waitFor(async () => expect(await modes()).toEqual({ echo: false, canonical: false }), WAIT)
    await launched.write!(Buffer.from('typed\n'))
    await vi.waitFor(async () => expect(await modes()).toEqual({ echo: true, canonical: true }), WAIT)
    await launched.terminate(500)
    await launched.release()
    const plain = await launchThroughAgent(session, spec('sleep 0.1', false), `dsh-test-modes-${process.pid}-2`)
    expect(plain.terminalModes).toBeUndefined()
    await plain.exited
    await plain.terminate(500)
    await plain.release()
  })
})
