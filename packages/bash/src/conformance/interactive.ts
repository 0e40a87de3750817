/**
 * The interactive part of the executor conformance suite (issue #15): a task started with
 * `interactive: true` runs in a terminal, takes input through `write`, and reads as text.
 *
 * The main suite (`defineBashExecutorConformance`) calls `defineInteractiveConformance` inside its
 * describe block. An executor whose tests pass `interactive: false` (SSH and containers until they
 * get a pty) does not skip silently: the suite prints why and asserts that `start` refuses an
 * interactive spec with `interactiveUnsupported` (so the day it gains a terminal, that test fails and
 * the option must go).
 *
 * This module imports `vitest`; import it from tests only.
 */
import { describe, expect, it, vi } from 'vitest'
import { BASH_ERROR } from '../errors.js'
import type { BashExecutor } from '../executor.js'
import type { BashExecRequest, BashTask } from '../types.js'

/** What the interactive tests need from the main suite. */
export interface InteractiveConformanceContext {
  /** A fresh executor (disposed by the main suite after the test), with config merged over its base. */
  executor(config?: { maxOutputBytes?: number; keepSpillFiles?: boolean }): Promise<BashExecutor>
  /** Live processes whose command line contains `marker` (see the main suite). */
  countProcesses(marker: string): Promise<number>
  /** An existing directory on the executor's machine. */
  workdir: string
  /** Reads a spill file (the main suite's `readSpillFile`). */
  readSpillFile(path: string): Promise<Buffer>
  /**
   * False: the executor cannot run interactive commands (yet); `reason` is printed, and the suite
   * checks that it refuses them clearly. Default true.
   */
  interactive?: boolean
  /** Why `interactive` is false (printed). */
  reason?: string
}

const WAIT = { timeout: 20_000, interval: 25 }

function digits(): string {
  let text = ''
  while (text.length < 12) text += Math.floor(Math.random() * 1e9).toString()
  return text.slice(0, 12)
}

/** The marker split by an empty quote, so that only the started process's argv carries it. */
const q = (marker: string) => `${marker.slice(0, 6)}''${marker.slice(6)}`

/** Accumulates an interactive task's reads (a read is a stream piece: their concatenation is the transcript). */
class Transcript {
  text = ''
  constructor(
    private readonly bash: BashExecutor,
    readonly task: BashTask,
  ) {}

  /** Reads until `predicate(this.text)` holds; returns the text read by this call. */
  async until(predicate: (text: string) => boolean): Promise<string> {
    const before = this.text.length
    await vi.waitFor(() => {
      this.text += this.bash.readOutput(this.task.id).delta
      expect(predicate(this.text), `transcript so far: ${JSON.stringify(this.text)}`).toBe(true)
    }, WAIT)
    return this.text.slice(before)
  }

  async send(data: string): Promise<void> {
    await this.bash.write(this.task.id, data)
  }

  /** Waits for the end and reads what is left. */
  async end(): Promise<BashTask> {
    await this.task.done
    this.text += this.bash.readOutput(this.task.id).delta
    return this.task
  }
}

export function defineInteractiveConformance(context: InteractiveConformanceContext): void {
  const { workdir } = context
  const start = (bash: BashExecutor, command: string, extra: Omit<BashExecRequest, 'command'> = {}) =>
    bash.start(bash.resolve({ command, workdir, interactive: true, ...extra }))
  const session = async (command: string, config?: Parameters<InteractiveConformanceContext['executor']>[0]) => {
    const bash = await context.executor(config)
    return new Transcript(bash, start(bash, command))
  }

  if (context.interactive === false) {
    describe('interactive tasks (not supported by this executor)', () => {
      console.warn(`[conformance] interactive tests not run: ${context.reason ?? 'the executor opted out'}; checking that it refuses them clearly`)
      it('refuses an interactive start with interactiveUnsupported, never running it without a terminal', async () => {
        const bash = await context.executor()
        let error: unknown
        try {
          start(bash, 'echo should-not-run')
        } catch (e) {
          error = e
        }
        expect((error as { code?: string })?.code).toBe(BASH_ERROR.interactiveUnsupported)
        expect(bash.list()).toEqual([])
      })
    })
    return
  }

  describe('interactive tasks', () => {
    it('run in a terminal: a tty on stdin, TERM=xterm-256color, 40 rows and 120 columns; others keep TERM=dumb', async () => {
      const bash = await context.executor()
      const t = new Transcript(bash, start(bash, 'tty; echo "term=$TERM"; stty size; [ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo all-ttys'))
      expect(t.task.interactive).toBe(true)
      await t.end()
      expect(t.task.status).toBe('completed')
      // bwrap shows the terminal as /dev/console in its own /dev.
      expect(t.text).toMatch(/^\/dev\/(pts\/\d+|tty\w*|console)\n/)
      expect(t.text).toContain('term=xterm-256color\n40 120\nall-ttys\n')
      const plain = bash.start(bash.resolve({ command: 'echo "term=$TERM"; [ -t 0 ] || echo no-tty', workdir }))
      expect(plain.interactive).toBe(false)
      await plain.done
      expect(bash.readOutput(plain.id).delta).toBe('term=dumb\nno-tty\n')
    })

    it('get the pagers\' secure modes (TERMINAL_ENV): the model types into them unchecked', async () => {
      const bash = await context.executor()
      const t = new Transcript(bash, start(bash, 'echo "less=$LESSSECURE allow=[${LESSSECURE_ALLOW-unset}] more=$MORESECURE systemd=$SYSTEMD_PAGERSECURE pager=$PAGER"'))
      await t.end()
      expect(t.text).toContain('less=1 allow=[] more=1 systemd=1 pager=cat\n')
      // A trusted caller's env still wins.
      const own = bash.start(bash.resolve({ command: 'echo "less=$LESSSECURE"', workdir, interactive: true, env: { LESSSECURE: '0' } }))
      await own.done
      expect(bash.readOutput(own.id).delta).toContain('less=0')
    })

    it('shows a prompt while it waits, once; the input answers it', async () => {
      const t = await session(`read -p 'Name? ' n; echo "hi $n"`)
      await t.until((text) => text === 'Name? ')
      // Nothing new: the waiting prompt is not delivered twice.
      expect((t as unknown as { bash: BashExecutor }).bash.readOutput(t.task.id).delta).toBe('')
      await t.send('Ada\n')
      await t.end()
      expect(t.text).toBe('Name? Ada\nhi Ada\n')
      expect(t.task.status).toBe('completed')
      expect(t.task.exitCode).toBe(0)
    })

    it('does not echo what is typed while echo is off (read -s), in reads and in the raw stream', async () => {
      const bash = await context.executor({ keepSpillFiles: true, maxOutputBytes: 100 })
      const t = new Transcript(bash, start(bash, `read -s -p 'Password: ' p; echo; echo "\${#p}"; seq 1 100`))
      await t.until((text) => text.includes('Password: '))
      await t.send('secret\n')
      await t.end()
      expect(t.text).toContain('\n6\n')
      expect(t.text).not.toContain('secret')
      const spill = bash.readOutput(t.task.id).spillPaths.stdout
      expect(spill).toBeDefined()
      expect((await context.readSpillFile(spill!)).toString('utf8')).not.toContain('secret')
    })

    it('Ctrl-C interrupts the foreground program (SIGINT to its group); Ctrl-D is end of input', async () => {
      const t = await session('while read -r line; do echo "got $line"; done; echo "eof seen"')
      await t.send('a\n')
      await t.until((text) => text.includes('got a\n'))
      await t.send('\u0004')
      await t.end()
      expect(t.text).toContain('eof seen')
      expect(t.task.status).toBe('completed')

      // Ctrl-C only once the program runs (a wrapper may ignore SIGINT until it execs the command).
      const marker = digits()
      const c = await session(`sleep 1000.${q(marker)}; echo not-reached`)
      await vi.waitFor(async () => expect(await context.countProcesses(`1000.${marker}`)).toBeGreaterThan(0), WAIT)
      await c.send('\u0003')
      await c.end()
      expect(c.text).not.toContain('not-reached')
      expect(c.task.status).toBe('killed')
      expect(c.task.signal).toBe('SIGINT')
    })

    it('a REPL-like bash loop: Ctrl-C ends the busy command it runs, the loop survives and answers; Ctrl-D leaves it', async () => {
      // bash only (no python in minimal images): a read loop with an INT trap, like python -i.
      const t = await session(`trap 'echo interrupted' INT; while read -r -p '> ' line; do eval "$line"; done; echo bye`)
      await t.until((text) => text.endsWith('> '))
      await t.send('x=$((6*7))\n')
      await t.until((text) => text.endsWith('\n> '))
      await t.send('echo "x is $x"\n')
      await t.until((text) => text.includes('x is 42\n> '))
      // A busy child process in the foreground (the loop waits for it): ^C goes to the whole group.
      await t.send("bash --noprofile --norc -c 'while :; do :; done'\n")
      await t.until((text) => text.endsWith("while :; do :; done'\n"))
      await t.send('\u0003')
      await t.until((text) => text.includes('interrupted\n'))
      await t.send('echo "still $x"\n')
      await t.until((text) => text.includes('still 42\n'))
      await t.send('\u0004')
      await t.end()
      expect(t.text.endsWith('bye\n')).toBe(true)
      expect(t.task.status).toBe('completed')
      expect(t.task.exitCode).toBe(0)
    })

    it('reads a full-screen program (the alternate screen) as its current screen under a header', async () => {
      const t = await session(`printf '\\033[?1049h\\033[H\\033[2Jtop line\\r\\n\\033[1msecond\\033[0m'; read -r x; printf '\\033[?1049l'; echo "left with $x"`)
      // Each screen read is the whole screen: the newest one counts (a read may come between the two lines).
      let screen = ''
      await vi.waitFor(() => {
        const delta = (t as unknown as { bash: BashExecutor }).bash.readOutput(t.task.id).delta
        if (delta !== '') screen = delta
        expect(screen).toContain('second')
      }, WAIT)
      expect(screen).toBe('[screen 120x40]\ntop line\nsecond')
      await t.send('q\n')
      await t.end()
      expect(t.text.endsWith('left with q\n')).toBe(true)
      expect(t.text).not.toContain('\u001b')
    })

    it('keeps the complete raw stream in the spill file when memory keeps only the tail', async () => {
      const bash = await context.executor({ maxOutputBytes: 1_000 })
      const t = new Transcript(bash, start(bash, 'seq 1 30000'))
      await t.end()
      expect(t.text.endsWith('29999\n30000\n')).toBe(true)
      const spill = bash.readOutput(t.task.id).spillPaths.stdout
      expect(spill).toBeDefined()
      const raw = (await context.readSpillFile(spill!)).toString('utf8')
      // The terminal turned each \n into \r\n (onlcr): the raw stream, byte for byte.
      expect(raw.split('\r\n')).toHaveLength(30001)
      expect(raw.endsWith('29999\r\n30000\r\n')).toBe(true)
    })

    it('a kill stops the whole tree, background processes of the terminal included', async () => {
      const marker = digits()
      const t = await session(`sleep 1000.${q(marker)} & sleep 1000.${q(marker)}; echo after`)
      await vi.waitFor(async () => expect(await context.countProcesses(`1000.${marker}`)).toBe(2), WAIT)
      const bash = (t as unknown as { bash: BashExecutor }).bash
      expect(await bash.kill(t.task.id)).toBe(true)
      expect(t.task.status).toBe('killed')
      expect(await context.countProcesses(`1000.${marker}`)).toBe(0)
    })

    it('reads the terminal modes as the program sets them: read -s echo off in line mode, read -e raw, cat echo on; coded errors', async () => {
      const bash = await context.executor()
      expect(typeof bash.terminalModes, 'the executor reads its terminals\' modes (terminalModes)').toBe('function')
      const modes = (id: string) => bash.terminalModes!(id)
      // Each waits for its own input line; the modes change as each program takes the terminal.
      const t = new Transcript(bash, start(bash, `read -s -p 'Password: ' p; echo; read -e -p 'Line: ' q; echo; cat`))
      await vi.waitFor(async () => expect(await modes(t.task.id)).toEqual({ echo: false, canonical: true }), WAIT)
      await t.send('hidden\n')
      await vi.waitFor(async () => expect(await modes(t.task.id)).toEqual({ echo: false, canonical: false }), WAIT)
      await t.send('typed\n')
      await vi.waitFor(async () => expect(await modes(t.task.id)).toEqual({ echo: true, canonical: true }), WAIT)
      await t.send('\u0004')
      await t.end()
      expect(t.task.status).toBe('completed')
      await expect(modes(t.task.id)).rejects.toMatchObject({ code: BASH_ERROR.taskFinished })
      await expect(modes('bash-999')).rejects.toMatchObject({ code: BASH_ERROR.unknownTask })
      const plain = bash.start(bash.resolve({ command: 'sleep 0.2', workdir }))
      await expect(modes(plain.id)).rejects.toMatchObject({ code: BASH_ERROR.notInteractive })
      await plain.done
    })

    it('write errors are coded: unknown task, not interactive (exact text), finished (naming its status); run refuses interactive', async () => {
      const bash = await context.executor()
      await expect(bash.write('bash-999', 'x')).rejects.toMatchObject({ code: BASH_ERROR.unknownTask })
      const plain = bash.start(bash.resolve({ command: 'sleep 0.2', workdir }))
      await expect(bash.write(plain.id, 'x')).rejects.toMatchObject({
        code: BASH_ERROR.notInteractive,
        message: `task ${plain.id} does not take input; start it with interactive: true`,
      })
      const done = start(bash, 'exit 3')
      await done.done
      await expect(bash.write(done.id, 'x')).rejects.toMatchObject({
        code: BASH_ERROR.taskFinished,
        message: `task ${done.id} has finished (status: completed, exit code: 3); it takes no more input`,
      })
      await expect(bash.run(bash.resolve({ command: 'true', workdir, interactive: true }))).rejects.toMatchObject({ code: BASH_ERROR.invalidRequest })
      await plain.done
    })
  })
}
