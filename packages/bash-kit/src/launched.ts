import type { Readable } from 'node:stream'
import type { CollectedOutput, ResourceFacts, SandboxFacts, TerminalModes } from '@deepseek-ai/dsh-bash'

/**
 * Who a launch is for, handed to `ProcessExecutor.launch`: backends read these fields instead of
 * parsing a label.
 */
export interface LaunchIdentity {
  /**
   * Unique per executor, safe in a file name: `run-3` for a foreground run, `bash-2` for a background
   * task (then it is the task's id). A run that yields becomes a task with another id: the backend
   * learns it through `ProcessExecutor.adopted`; a run's id is never a task id.
   */
  id: string
  /** `run`: a foreground call (it may yield later); `task`: started in the background by `start`. */
  kind: 'run' | 'task'
  /** The spec's owner token (undefined for unowned calls); never a host or a session name. */
  owner: string | undefined
}

/** How the main process ended. */
export interface ExitFacts {
  /** Exit code; null when it died from a signal. */
  exitCode: number | null
  /** Signal name (`SIGTERM`); null when it exited. */
  signal: string | null
}

/**
 * One started command, as an executor backend sees it. This is the whole per-executor surface:
 * `ProcessExecutor` does timeouts, aborts, leftovers, draining, tasks, reads and disposal on top.
 */
export interface LaunchedCommand {
  /** The main process's stdout and stderr. */
  readonly stdout: Readable
  readonly stderr: Readable
  /** Resolves once the main process has exited. Never rejects. */
  readonly exited: Promise<ExitFacts>
  /** Live processes of the command other than the main process (zombies excluded). */
  countLeftovers(): Promise<number>
  /**
   * Sends SIGTERM to every process of the command, then SIGKILL after `graceMs` to whatever is
   * left, whether or not the main process already exited; resolves when none is left (or when the
   * backend can do no more). Never rejects. Safe to call more than once (later calls join the first).
   */
  terminate(graceMs: number): Promise<void>
  /** Resolves when no process of the command is left. Never rejects. */
  whenEmpty(): Promise<void>
  /** Frees what the launch created (cgroup, script file, channel). Called exactly once, at the end. */
  release(): void | Promise<void>
  /**
   * Executors that confine report sandbox facts here, from the finished command's exit and stderr.
   * Undefined for executors that do not confine.
   */
  sandboxFacts?(exit: ExitFacts, stderr: CollectedOutput): SandboxFacts | undefined
  /**
   * What the command used and which limit stopped it (`ResourceFacts`), read once no process of it
   * is left and before `release` (which frees what it is read from: the cgroup). Undefined, or
   * absent, where the backend measures nothing.
   */
  resourceFacts?(): ResourceFacts | undefined
  /**
   * Set by backends that can lose the command without an exit (a dropped SSH connection): the
   * reason is reported on the task, and the run rejects with it as an infrastructure failure.
   */
  lostReason?(): string | undefined
  /**
   * True when the command runs in a pseudo-terminal (a launch of a spec with `interactive`):
   * `stdout` is then the raw terminal stream (the program's stdout and stderr, merged by the
   * terminal, with its escape sequences), `stderr` is a stream that ends without data, and `write`
   * is defined. Absent or false: plain pipes, `write` absent.
   */
  readonly terminal?: boolean
  /**
   * Interactive launches only: writes bytes to the terminal's input side (the master), as typed
   * keys. Resolves once the bytes are handed over; rejects when the terminal is already closed.
   * Must not block the event loop on a program that does not read.
   */
  write?(data: Uint8Array): Promise<void>
  /** Interactive launches only, optional: sets the terminal size (the program gets SIGWINCH). */
  resize?(cols: number, rows: number): void
  /**
   * Interactive launches only, optional: the terminal's modes now (echo, line mode), read from the
   * terminal the program sees (its termios; the master's settings are the slave's). Undefined when
   * the backend cannot tell (the read failed, no tool to read it on the other side, the terminal
   * already closed); never a guess. Never rejects. Absent: the backend cannot tell at all.
   */
  terminalModes?(): Promise<TerminalModes | undefined>
}
