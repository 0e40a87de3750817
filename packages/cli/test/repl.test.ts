import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAIN, marker, pidsWith, waitFor } from './helpers.js'

/** A REPL with piped stdin: lines are written one at a time, stdout is collected. */
function startRepl(args: string[]) {
  const proc = spawn(process.execPath, [MAIN, 'repl', ...args], { stdio: ['pipe', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  proc.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
  proc.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()))
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)))
  let mark = 0
  return {
    proc,
    exited,
    stderr: () => err,
    /** Sends one line; resolves with the stdout it produced once `until` is in it. */
    async send(line: string, until: string | RegExp): Promise<string> {
      const from = out.length
      proc.stdin.write(`${line}\n`)
      const found = await waitFor(`${JSON.stringify(until)} after ${JSON.stringify(line)}\nstdout so far: ${out}\nstderr: ${err}`, () => {
        const fresh = out.slice(from)
        return typeof until === 'string' ? fresh.includes(until) : until.test(fresh)
      })
      mark = out.length
      return found ? out.slice(from) : ''
    },
    /** Output since the last `send` completed. */
    since: () => out.slice(mark),
    all: () => out,
  }
}

describe('dsh-bash repl with piped stdin', () => {
  let dir: string
  let repl: ReturnType<typeof startRepl>

  beforeAll(() => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-repl-')))
    repl = startRepl(['--workdir', dir])
  })
  afterAll(() => {
    if (repl.proc.exitCode === null) repl.proc.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  })

  it('a foreground command prints exactly the model text', async () => {
    expect(await repl.send('echo hello; pwd', 'hello')).toBe(`hello\n${dir}\n`)
    expect(await repl.send('echo failing; exit 3', '[exit code: 3]')).toBe('failing\n[exit code: 3]\n')
    expect(await repl.send('printf out; printf err >&2', 'err')).toBe('out\n[stderr]\nerr\n')
  })

  it('&command starts a background task; its notice appears when it ends; :output reads it', async () => {
    const gate = join(dir, 'gate')
    const printed = join(dir, 'printed')
    expect(await repl.send(`&echo first; touch printed; while [ ! -e gate ]; do sleep 0.05; done; echo second`, 'started')).toBe(
      'started background task bash-1\n',
    )
    await waitFor('the task to print', () => existsSync(printed))
    // The file exists before the REPL has necessarily read the pipe: reads of nothing consume nothing.
    let read = ''
    do read = await repl.send(':output bash-1', '[status: running]')
    while (read === '(no new output)\n[status: running]\n')
    expect(read).toBe('first\n[status: running]\n')
    writeFileSync(gate, '')
    const notice = 'background bash task bash-1 finished [status: completed, exit code: 0]. Read its output with bash_output.'
    await waitFor('the notice', () => repl.since().includes(notice))
    expect(repl.since()).toBe(`[notice] ${notice}\n`)
    expect(await repl.send(':output bash-1', '[status:')).toBe('second\n[status: completed, exit code: 0]\n')
    expect(await repl.send(':output bash-1', '[status:')).toBe('(no new output)\n[status: completed, exit code: 0]\n')
  })

  it(':kill stops a task (its notice is printed once), then reports it as already finished; :tasks lists the tasks', async () => {
    const tag = marker()
    expect(await repl.send(`&exec -a ${tag} sleep 300`, 'started')).toBe('started background task bash-2\n')
    await waitFor('the task to run', () => pidsWith(tag).length === 1)
    expect(await repl.send(':tasks', 'bash-2')).toBe(
      'bash-1  completed, exit code 0  echo first; touch printed; while [ ! -e gate ]; do sleep 0.05; done; echo second\n' +
        `bash-2  running  exec -a ${tag} sleep 300\n`,
    )
    const killed = await repl.send(':kill bash-2', 'killed background task bash-2')
    expect(killed).toBe(
      '[notice] background bash task bash-2 finished [status: killed by SIGTERM]. Read its output with bash_output.\n' +
        'killed background task bash-2\n',
    )
    expect(pidsWith(tag)).toEqual([])
    expect(await repl.send(':kill bash-2', 'finished')).toBe('task bash-2 had already finished\n')
    expect(await repl.send(':output bash-99', 'Error')).toBe('Error: unknown bash task "bash-99"\n')
  })

  it('reports REPL mistakes and shows whole results with :json', async () => {
    expect(await repl.send(':output', 'needs')).toBe(':output needs a task id, e.g. :output bash-1\n')
    expect(await repl.send(':nope', 'unknown')).toBe('unknown REPL command :nope; :help lists them\n')
    expect(await repl.send(':help', ':quit')).toContain('&COMMAND')
    expect(await repl.send(':call bash {"command":"echo via call","description":"Echo a line"}', 'via')).toBe('via call\n')
    // The JSON is taken verbatim: runs of spaces inside strings survive.
    expect(await repl.send(':call bash {"command":"printf \'%s\\\\n\' \'a   b\'","description":"Keep spaces"}', 'a')).toBe('a   b\n')
    expect(await repl.send(':call bash_output {"task_id":"bash-99"}', 'Error')).toBe('Error: unknown bash task "bash-99"\n')
    expect(await repl.send(':call bash {"command":"x"}', 'Error')).toBe('Error: invalid arguments: missing required property "description"\n')
    expect(await repl.send(':call bash {oops', 'JSON')).toMatch(/^:call: the arguments are not JSON: /)
    await repl.send(':json', 'JSON')
    // The whole result: the text and the facts (durationMs varies).
    const whole = JSON.parse(await repl.send('true', '}}\n')) as { structured: Record<string, unknown> }
    // CPU time and peak memory come only where the executor measures them (cgroup containment): both or neither.
    const { cpuMs, peakMemoryBytes, ...facts } = whole.structured
    expect([typeof cpuMs, typeof peakMemoryBytes]).toEqual(cpuMs === undefined ? ['undefined', 'undefined'] : ['number', 'number'])
    expect({ ...whole, structured: facts }).toEqual({
      content: [{ type: 'text', text: '(no output)' }],
      isError: false,
      structured: { status: 'completed', exitCode: 0, signal: null, taskId: null, truncated: false, fullOutput: null, fullOutputs: { stdout: null, stderr: null }, durationMs: expect.any(Number), workdir: expect.any(String), sandboxMode: null, outputBytes: { stdout: 0, stderr: 0 } },
    })
    await repl.send(':json', 'texts')
  })

  it('end of input kills what still runs and exits 0', async () => {
    const tag = marker()
    await repl.send(`&exec -a ${tag} sleep 300`, 'started')
    await waitFor('the task to run', () => pidsWith(tag).length === 1)
    repl.proc.stdin.end()
    expect(await repl.exited).toBe(0)
    expect(pidsWith(tag)).toEqual([])
    expect(repl.stderr()).toContain('killing 1 running background task(s)')
    expect(existsSync(dir)).toBe(true)
  })
})

describe('dsh-bash repl: quitting', () => {
  it(':quit exits 0', async () => {
    const repl = startRepl([])
    expect(await repl.send('echo hi', 'hi')).toBe('hi\n')
    repl.proc.stdin.write(':quit\n')
    expect(await repl.exited).toBe(0)
  })
})
