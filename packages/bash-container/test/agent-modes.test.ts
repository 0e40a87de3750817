import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { TerminalModes } from '@deepseek-ai/dsh-bash'
import type { LaunchedCommand } from '@deepseek-ai/dsh-bash-kit'
import { AGENT_SCRIPT, AgentSession, launchThroughAgent } from '../src/index.js'

const perl = spawnSync('perl', ['-v']).status === 0
const WAIT = { timeout: 20_000, interval: 50 }

/**
 * The in-container agent run on this machine (`perl -e AGENT_SCRIPT bash`, as the engine runs it
 * in a container): its terminal modes are its own Perl (POSIX::Termios on the pty master), so they
 * are tested here even where no container engine runs; the container and pod executors add only
 * transport. The commands are this file's own.
 */
class HostAgentSession extends AgentSession {
  private child?: ChildProcess
  constructor() {
    super()
  }
  get shortId(): string {
    return 'host-agent'
  }
  async boot(): Promise<void> {
    const child = spawn('perl', ['-e', AGENT_SCRIPT, 'bash'], { stdio: ['pipe', 'pipe', 'pipe'] })
    this.child = child
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()))
    await this.startAgent({ stdin: child.stdin!, stdout: child.stdout!, stderr: child.stderr!, closed, destroy: () => child.kill('SIGKILL') })
  }
  protected async destroyBackend(): Promise<void> {
    // Its stdin ending makes the agent KILL every command it runs, then exit.
    this.child?.stdin?.end()
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) await new Promise((resolve) => this.child!.once('close', resolve))
  }
}

describe.skipIf(!perl)('the container agent reads its terminals\' modes (run on this machine)', () => {
  let session: HostAgentSession | undefined
  afterEach(async () => {
    await session?.remove()
    session = undefined
  })

  it('read -s: echo off in line mode; read -e: raw; cat: echo on; a command without a terminal has none', async () => {
    session = new HostAgentSession()
    await session.boot()
    const spec = (command: string, interactive: boolean) => ({ command, workdir: '/', timeoutMs: 60_000, interactive, env: {} }) as never
    const launched: LaunchedCommand = await launchThroughAgent(session, spec(`read -s -p 'Password: ' p; echo; read -e -p 'Line: ' q; echo; cat`, true), 'dsh-test-modes-1')
    const modes = (): Promise<TerminalModes | undefined> => launched.terminalModes!()
    await vi.waitFor(async () => expect(await modes()).toEqual({ echo: false, canonical: true }), WAIT)
    await launched.write!(Buffer.from('hidden\n'))
    await vi.waitFor(async () => expect(await modes()).toEqual({ echo: false, canonical: false }), WAIT)
    await launched.write!(Buffer.from('typed\n'))
    await vi.waitFor(async () => expect(await modes()).toEqual({ echo: true, canonical: true }), WAIT)
    await launched.terminate(500)
    await launched.release()
    const plain = await launchThroughAgent(session, spec('sleep 0.1', false), 'dsh-test-modes-2')
    expect(plain.terminalModes).toBeUndefined()
    await plain.exited
    await plain.terminate(500)
    await plain.release()
  })
})
