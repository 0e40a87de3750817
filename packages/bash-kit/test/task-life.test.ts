import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { afterAll, describe, expect, it } from 'vitest'
import type { ExitFacts, LaunchedCommand } from '../src/launched.js'
import { OutputPair } from '../src/output-pair.js'
import { TaskLife, type TaskLifeHost } from '../src/task-life.js'
import { TaskView } from '../src/task.js'
import { TerminalView } from '../src/terminal.js'

// Each edge of a task's life (task-life.ts) taken on its own, over a scripted launched command:
// the test decides when the main process exits and when the last process is gone. The real
// processes behind these edges are the conformance suite's (every executor runs it).

const dir = mkdtempSync(join(tmpdir(), 'dsh-task-life-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A launched command whose exit and emptiness the test settles; it records every call. */
function scripted(options: { terminal?: boolean } = {}) {
  const calls: string[] = []
  let exit!: (facts: ExitFacts) => void
  let empty!: () => void
  const stdout = new PassThrough()
  const stderr = new PassThrough()
  const exited = new Promise<ExitFacts>((resolve) => (exit = resolve))
  const whenEmpty = new Promise<void>((resolve) => (empty = resolve))
  const command: LaunchedCommand = {
    stdout,
    stderr,
    exited,
    countLeftovers: async () => 0,
    terminate: async (graceMs) => {
      calls.push(`terminate ${graceMs}`)
      exit({ exitCode: null, signal: 'SIGTERM' })
      empty()
    },
    whenEmpty: () => whenEmpty,
    release: () => void calls.push('release'),
    ...(options.terminal ? { terminal: true, write: async () => undefined } : {}),
  }
  /** The main process exits by itself and nothing is left; its pipes close. */
  const finish = (facts: ExitFacts = { exitCode: 0, signal: null }) => {
    exit(facts)
    empty()
    stdout.end()
    stderr.end()
  }
  return { command, calls, finish, closePipes: () => (stdout.end(), stderr.end()) }
}

let seq = 0
function newLife(kind: 'launching' | 'adopted', launching?: LaunchedCommand | Promise<LaunchedCommand>, interactive = false) {
  const ended: TaskLife[] = []
  const host: TaskLifeHost = { graceMs: 7, drainMs: 10_000, logError: () => undefined, ended: (life) => ended.push(life) }
  const id = `bash-${++seq}`
  const output = new OutputPair({ maxBytes: 1000, maxSpillBytes: 0, dir, label: id, keepSpillFile: false }, join)
  const parts = { view: new TaskView(id, 'cmd', '/', undefined, interactive), owner: 'o', output, ...(interactive ? { terminal: new TerminalView() } : {}) }
  const life = kind === 'launching' ? TaskLife.launching(host, parts, launching!) : TaskLife.adopted(host, parts, launching as LaunchedCommand)
  return { life, ended }
}

/** A promise and its settlers, for a launch the test completes. */
function pending<T>() {
  let resolve!: (value: T) => void
  let reject!: (error: unknown) => void
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)))
  return { promise, resolve, reject }
}

const turn = () => new Promise((resolve) => setImmediate(resolve))

describe('TaskLife: every edge of a background task', () => {
  it('launching → running (launched) → draining (processes gone) → ended completed (drained)', async () => {
    const launch = pending<LaunchedCommand>()
    const { life, ended } = newLife('launching', launch.promise)
    expect(life.state).toBe('launching')
    const cmd = scripted()
    launch.resolve(cmd.command)
    await turn()
    expect(life.state).toBe('running')
    cmd.finish()
    await life.view.done
    expect(life.state).toBe('ended')
    expect(life.view.status).toBe('completed')
    expect(life.view.exitCode).toBe(0)
    expect(cmd.calls).toEqual(['release'])
    expect(ended).toEqual([life])
  })

  it('launching → ended (launch failed): killed with "failed to start: <why>"', async () => {
    const launch = pending<LaunchedCommand>()
    const { life, ended } = newLife('launching', launch.promise)
    launch.reject(new Error('workdir does not exist: /nope'))
    await life.view.done
    expect(life.state).toBe('ended')
    expect(life.view.status).toBe('killed')
    expect(life.view.reason).toBe('failed to start: workdir does not exist: /nope')
    expect(ended).toHaveLength(1)
  })

  it('launching → stop-pending (stop) → stopping (launched: terminated at once) → ended killed', async () => {
    const launch = pending<LaunchedCommand>()
    const { life } = newLife('launching', launch.promise)
    expect(life.requestStop()).toBe(true)
    expect(life.state).toBe('stop-pending')
    expect(life.requestStop()).toBe(false)
    const cmd = scripted()
    launch.resolve(cmd.command)
    await turn()
    expect(cmd.calls).toContain('terminate 7')
    cmd.closePipes()
    await life.view.done
    expect(life.view.status).toBe('killed')
    expect(life.view.signal).toBe('SIGTERM')
  })

  it('stop-pending → ended (launch failed): killed, nothing to terminate', async () => {
    const launch = pending<LaunchedCommand>()
    const { life } = newLife('launching', launch.promise)
    life.requestStop()
    launch.reject(new Error('no connection'))
    await life.view.done
    expect(life.view.status).toBe('killed')
    expect(life.view.reason).toBe('failed to start: no connection')
  })

  it('running → stopping (stop: true once, then false) → draining → ended killed', async () => {
    const cmd = scripted()
    const { life } = newLife('launching', cmd.command)
    await turn()
    expect(life.state).toBe('running')
    expect(life.requestStop()).toBe(true)
    expect(life.state).toBe('stopping')
    expect(life.requestStop()).toBe(false)
    cmd.closePipes()
    await life.view.done
    expect(cmd.calls.filter((c) => c.startsWith('terminate'))).toHaveLength(1)
    expect(life.view.status).toBe('killed')
    expect(life.requestStop()).toBe(false)
  })

  it('running → stopping (an interactive launch without a terminal): killed with the reason', async () => {
    const cmd = scripted({ terminal: false })
    const { life } = newLife('launching', cmd.command, true)
    await turn()
    expect(life.state).not.toBe('running')
    cmd.closePipes()
    await life.view.done
    expect(life.view.status).toBe('killed')
    expect(life.view.reason).toBe('failed to start: the executor gave the interactive command no terminal')
    expect(await life.liveCommand()).toBeUndefined()
  })

  it('an interactive launch with a terminal runs, and its command is live until its processes are gone', async () => {
    const cmd = scripted({ terminal: true })
    const { life } = newLife('launching', cmd.command, true)
    expect(await life.liveCommand()).toBe(cmd.command)
    expect(life.state).toBe('running')
    cmd.finish()
    await life.view.done
    expect(await life.liveCommand()).toBeUndefined()
  })

  it('draining: a stop asked between the last process and the drain stops nothing', async () => {
    const cmd = scripted()
    const { life } = newLife('launching', cmd.command)
    await turn()
    // The processes are gone (ended from outside the task), but the pipes stay open: the drain
    // window holds the task in `draining`.
    await cmd.command.terminate(0)
    await turn()
    expect(life.state).toBe('draining')
    expect(life.requestStop()).toBe(false)
    cmd.closePipes()
    await life.view.done
    expect(life.view.status).toBe('killed')
  })

  it('a yielded run enters at running; its run settles it: draining → ended, a timeout given as the reason', async () => {
    const cmd = scripted()
    const { life, ended } = newLife('adopted', cmd.command)
    expect(life.state).toBe('running')
    let settle!: (value: { exit: ExitFacts }) => void
    const following = life.followYielded(new Promise((resolve) => (settle = resolve)), () => 'timed out after 5ms')
    settle({ exit: { exitCode: null, signal: 'SIGTERM' } })
    await following
    expect(life.state).toBe('ended')
    expect(life.view.status).toBe('killed')
    expect(life.view.reason).toBe('timed out after 5ms')
    expect(cmd.calls).toEqual(['release'])
    expect(ended).toEqual([life])
  })

  it('a yielded run killed through its task: stop is true once; the run failing ends it with its message', async () => {
    const cmd = scripted()
    const { life } = newLife('adopted', cmd.command)
    expect(life.requestStop()).toBe(true)
    expect(life.stopRequested).toBe(true)
    await life.followYielded(Promise.reject(new Error('lost the far side')), () => undefined)
    expect(life.view.status).toBe('killed')
    expect(life.view.reason).toBe('lost the far side')
  })

  it('edges that cannot happen are refused loudly, naming the task and its state', async () => {
    const cmd = scripted()
    const { life } = newLife('adopted', cmd.command)
    expect(() => life.launchedAs(cmd.command)).toThrow(/task life: bash-\d+ launched while running/)
    expect(() => life.launchFailed(new Error('x'))).toThrow(/launch failed while running/)
    expect(() => life.drained({ exitCode: 0, signal: null })).toThrow(/drained while running/)
    life.processesGone()
    expect(() => life.processesGone()).toThrow(/lost its processes while draining/)
  })
})
