/**
 * The executor seam's data types. These are the contract between the tools (which render text for
 * models) and the executors (which run processes): plain data, no text markers, no model concepts.
 */

/**
 * A sandbox mode name: one of `SANDBOX_MODES` (sandbox-modes.ts, narrowest first) for the executors
 * of this repository. Typed as a string because it arrives from outside (a client, a session
 * header) and is checked against `ExecutorCapabilities.sandboxModes` where it matters.
 */
export type SandboxMode = string

/**
 * What an executor can do, as it says itself (`BashExecutor.capabilities`): the tool schemas, the
 * MCP session options and the CLI's checks are derived from it instead of guessing per executor
 * kind. Fixed for the executor's life (it depends on its config, never on a call). Truthful: each
 * executor's tests check every field against what it does.
 */
export interface ExecutorCapabilities {
  /**
   * The sandbox modes a command can run under, narrowest first (a part of `SANDBOX_MODES` in its
   * order); the executor's default (`sandboxMode`) is one of them. Empty: the executor does not
   * confine (its `sandboxMode` is undefined, a requested mode is ignored). Never the modes a
   * caller is allowed to pick: front ends narrow that (a session may not widen the default).
   */
  readonly sandboxModes: readonly SandboxMode[]
  /**
   * True when `start` runs a spec with `interactive` in a pseudo-terminal (and `write`,
   * `terminalModes` serve it). False: `start` refuses it (`DSH_INTERACTIVE_UNSUPPORTED`). Never a
   * promise that a terminal's modes can be read (`terminalModes` may still answer undefined).
   */
  readonly interactive: boolean
  /**
   * True when `resize` changes a running interactive task's terminal size (its program gets
   * SIGWINCH). False: the terminal keeps 120x40 and `resize` rejects. Always false when
   * `interactive` is.
   */
  readonly resize: boolean
  /**
   * Where the paths of a command live: `host`, this server's machine, as this process sees it (a
   * spill path a result names can be opened by the next command, a workdir is a directory here);
   * `remote`, another machine, container or pod (a workdir is a path over there; the spill files
   * stay here, where only `readFullOutput` reaches them). Never says which machine.
   */
  readonly paths: 'host' | 'remote'
  /**
   * The resource limits the executor can enforce on every command when configured (names of its
   * `limits` config keys), in the order `memory`, `pids`, `cpu`, `tmp`. Empty: none. Never the
   * limits now in force (that is the config), nor a promise about limits of other processes.
   */
  readonly limits: readonly ('memory' | 'pids' | 'cpu' | 'tmp')[]
  /**
   * How the network of a command is governed, as configured: `off` (no network but a private
   * loopback), `on` (the machine's network, granted by the sandbox), `proxy` (egress by host name
   * through the executor's proxy; a request's `network` rules narrow it), for commands under a
   * confining mode (`danger-full-access` is unconfined, network included). Empty: the executor
   * does not govern the network (a command has whatever its machine gives). Never a statement
   * about what that machine's network allows.
   */
  readonly networkModes: readonly ('off' | 'on' | 'proxy')[]
}

/** What a caller asks for. Only `command` is required; `resolve` fills in the rest. */
export interface BashExecRequest {
  /** The script given to `bash -c`. Never empty. */
  command: string
  /**
   * Working directory. A relative value resolves against the executor's configured `cwd`
   * (else `process.cwd()`). Omitted: the executor's `cwd`.
   */
  workdir?: string
  /**
   * Foreground timeout in milliseconds. Omitted: the executor's default. Always capped by the
   * executor's maximum. A non-positive or non-finite value is an error, never "no timeout".
   */
  timeoutMs?: number
  /** Aborts the command: it is killed (TERM, then KILL after the grace period). */
  signal?: AbortSignal
  /** Opaque owner token stored on a background task (a session id). Never interpreted by executors. */
  owner?: string
  /** Bytes for the command's stdin. For trusted in-process callers only; never from a model. Default: /dev/null. */
  stdin?: string | Uint8Array
  /** Extra environment variables; win over everything. For trusted in-process callers only; never from a model. */
  env?: Readonly<Record<string, string>>
  /** Requested sandbox mode; ignored by executors that do not confine. */
  sandboxMode?: SandboxMode
  /**
   * Egress rules of the caller (a session's): host patterns as the executor's own. They narrow the
   * executor's, never widen them: a host must pass both. Honoured by executors with an egress proxy
   * (the sandbox); ignored by the others. Validated by `resolve`.
   */
  network?: EgressRules
  /**
   * Live output of a foreground `run`, for progress displays: called with each decoded piece of
   * text as it arrives (never split inside a character). For trusted in-process callers; a throw is
   * ignored. Never called by `start` (background output is read with `readOutput`). It changes
   * nothing in the result.
   */
  onOutput?: OutputListener
  /**
   * Yield time of a foreground `run`, in ms: a command still running this long after its start
   * stops being a foreground call. `run` then resolves with the output so far and `yieldedTo` set,
   * and the command goes on as a background task of the same owner (`get`, `readOutput`, `kill`,
   * `onTaskDone` as for any task). Its timeout still applies, counted from its start. Omitted: the
   * run never yields. Must be a positive finite number. Ignored by `start`.
   */
  yieldAfterMs?: number
  /**
   * Runs the command in a pseudo-terminal, for programs that talk to a person (prompts, REPLs,
   * debuggers, pagers). Background only: `start` accepts it, `run` rejects it (`invalidRequest`).
   * The command's stdin, stdout and stderr are the terminal (so stderr is merged into stdout and a
   * task's `[stderr]` part stays empty); `TERMINAL_ENV` on top of the usual environment
   * (`TERM=xterm-256color` instead of `dumb`, the pagers' secure modes); the terminal has
   * the fixed size `TERMINAL_COLS` x `TERMINAL_ROWS` (120x40). Input goes in with
   * `BashExecutor.write`. `readOutput` returns the text a terminal shows, never escape sequences;
   * spill files keep the raw terminal stream. `stdin` must not be set with it. Never set by default;
   * an executor that cannot provide a terminal refuses it (`interactiveUnsupported`), never runs the
   * command without one.
   */
  interactive?: boolean
}

/**
 * Egress rules: host patterns (`example.com`; `*.example.com` for every name below it; an IP
 * address). `deny` wins over `allow`; an empty or absent `allow` allows every host not denied.
 */
export interface EgressRules {
  readonly allow?: readonly string[]
  readonly deny?: readonly string[]
}

/** The fixed terminal size of interactive tasks (columns). */
export const TERMINAL_COLS = 120
/** The fixed terminal size of interactive tasks (rows). */
export const TERMINAL_ROWS = 40
/** `TERM` of interactive tasks (every other command gets `dumb`). */
export const TERMINAL_TERM = 'xterm-256color'

/**
 * The environment every executor gives an interactive task on top of its usual one (a trusted
 * caller's `env` still wins): the terminal's `TERM`, and the secure modes of the programs whose
 * keys run other programs. A model types into an interactive task and nobody checks the keys, so
 * a pager allowed to show a file must not also be a shell:
 * - `LESSSECURE=1`: less turns off `!` (shell), `|` (pipe), `v` (editor), `:e` (another file),
 *   `s`/`-o` (log files), lesskey and tags files, filename globbing and completion; it also holds
 *   for man, git, journalctl and the rest when their pager is less;
 * - `LESSSECURE_ALLOW=` (empty): less 643 and later let this variable turn features back on;
 * - `MORESECURE=1`: util-linux more without `!` and `v`, in releases that know it (util-linux
 *   pull request 3504, 2025; older ones, like 2.38, ignore it);
 * - `SYSTEMD_PAGERSECURE=1`: systemctl, journalctl & co. run their pager in secure mode.
 * Programs without such a switch (vim, python, psql, gdb, …) keep every key: see bash-policy's
 * README, "Interactive tasks".
 */
export const TERMINAL_ENV: Readonly<Record<string, string>> = Object.freeze({
  TERM: TERMINAL_TERM,
  LESSSECURE: '1',
  LESSSECURE_ALLOW: '',
  MORESECURE: '1',
  SYSTEMD_PAGERSECURE: '1',
})

/** Receives live foreground output (see `BashExecRequest.onOutput`). */
export type OutputListener = (stream: 'stdout' | 'stderr', text: string) => void

/**
 * A fully resolved request: the output of `resolve`, the only input of `run` and `start`.
 * `run` and `start` never apply defaults again.
 */
export interface BashExecSpec {
  readonly command: string
  /** Absolute working directory. */
  readonly workdir: string
  /** Effective foreground timeout in ms: min(requested ?? default, max). Ignored by `start`. */
  readonly timeoutMs: number
  readonly signal?: AbortSignal
  /** The owner token, or undefined (the key is always present). */
  readonly owner: string | undefined
  readonly stdin?: string | Uint8Array
  readonly env?: Readonly<Record<string, string>>
  /** The effective sandbox mode, or undefined for executors that do not confine (the key is always present). */
  readonly sandboxMode: SandboxMode | undefined
  /** The caller's egress rules, validated (see `BashExecRequest.network`); absent: none. */
  readonly network?: EgressRules
  /** Live output listener of a foreground run (see `BashExecRequest.onOutput`). */
  readonly onOutput?: OutputListener
  /** Yield time of a foreground run (see `BashExecRequest.yieldAfterMs`); absent: never yields. */
  readonly yieldAfterMs?: number
  /** True: run in a pseudo-terminal (see `BashExecRequest.interactive`). Absent or false: no terminal. */
  readonly interactive?: boolean
}

/** One output stream as collected by an executor. */
export interface CollectedOutput {
  /**
   * The stream as UTF-8 text: the whole stream, or its tail when it was longer than the executor's
   * memory bound (trimmed at a character boundary). Invalid bytes and NUL bytes appear as U+FFFD.
   */
  text: string
  /** True when `text` is only the tail: some leading bytes are not in `text`. */
  truncated: boolean
  /** Number of stream bytes (from the start) that are not in `text`; 0 when not truncated. */
  droppedBytes: number
  /** Total bytes the stream produced. */
  totalBytes: number
  /**
   * Absolute path of a file holding the complete stream from byte 0. Present only when such a copy
   * exists and was written and closed intact; never a partial or broken file.
   */
  spillPath?: string
}

/** Facts about confinement, reported only by executors that confine. */
export interface SandboxFacts {
  /** The mode the command ran under. */
  mode: SandboxMode
  /** True when the command exited non-zero and its stderr shows a write the sandbox refused. */
  accessDenied: boolean
  /** Wider modes this call could be retried with (for escalation hints); empty when none. */
  escalations?: SandboxMode[]
  /**
   * Hosts the sandbox's egress proxy refused during the command (a name as the command asked for
   * it, or an address), each once, in the order of their first refusal. Absent or empty when
   * nothing was refused (also when the executor has no proxy). Never a host that was allowed.
   */
  deniedHosts?: string[]
}

/**
 * What a command used, and which limit stopped it, where the executor can measure it (every field
 * optional: absent means "not measured", never zero).
 */
export interface ResourceFacts {
  /** CPU time (user + system) of all the command's processes together, in ms. */
  cpuMs?: number
  /** The highest memory use of the command's processes together (their cgroup's peak), in bytes. */
  peakMemoryBytes?: number
  /** Limits the command reached; absent when it reached none (or the executor cannot tell). */
  limitReached?: LimitReached
}

/** Limits a command reached, each with its value. */
export interface LimitReached {
  /** The memory limit, in bytes: set only when the kernel killed a process of the command for reaching it. */
  memoryBytes?: number
  /** The process limit: set only when the kernel refused a fork (or clone) of the command for reaching it. */
  processes?: number
}

/** The result of a foreground `run`. */
export interface BashRunResult {
  /**
   * The launch id of this run (`run-3`): its complete output is `readFullOutput({id, stream})`
   * while the executor keeps it (see `FullOutputRead`). Set by every executor built on the kit;
   * a yielded run's task keeps answering to it too.
   */
  id?: string
  /** Exit code of the main process; null when it died from a signal. */
  exitCode: number | null
  /** Name of the signal that killed the main process (`SIGTERM`, …); null when it exited. */
  signal: string | null
  /**
   * True when the executor's timer fired, however the process then ended (even if it trapped
   * SIGTERM and exited 0). Never true together with `aborted`: the first cause wins.
   */
  timedOut: boolean
  /** True when the caller's AbortSignal stopped the command (and the timer had not fired first). */
  aborted: boolean
  /** The effective timeout in ms. */
  timeoutMs: number
  stdout: CollectedOutput
  stderr: CollectedOutput
  /** Wall time from start to the end of the call, in ms. */
  durationMs: number
  /**
   * Number of processes still running when the main process exited by itself; they were stopped.
   * 0 after a timeout or an abort (everything is killed then anyway).
   */
  leftoverProcesses: number
  /** Present only for executors that confine. */
  sandbox?: SandboxFacts
  /** CPU time of the command's processes, in ms; present where the executor measures it (see `ResourceFacts`). */
  cpuMs?: number
  /** The command's peak memory, in bytes; present where the executor measures it (see `ResourceFacts`). */
  peakMemoryBytes?: number
  /** The limits the command reached; absent when none (see `ResourceFacts`). Never set for a yielded run. */
  limitReached?: LimitReached
  /**
   * Set only when the run yielded (`spec.yieldAfterMs`): the id of the background task the
   * still-running command became. Then `exitCode` and `signal` are null, `timedOut`, `aborted` are
   * false, `leftoverProcesses` is 0, `durationMs` is the time until the yield, and `stdout` /
   * `stderr` hold the output up to the yield, already consumed: the task's first `readOutput`
   * continues right after it (never repeating, never skipping). A truncated stream's `spillPath`
   * names a file that is still growing. Never set when the command ended before the yield time.
   */
  yieldedTo?: string
}

/** `running` until no process of the task is left; `killed` when it died from any signal or was stopped by `kill`. */
export type BashTaskStatus = 'running' | 'completed' | 'killed'

/** A background task. The object is live: its fields change as the task ends. */
export interface BashTask {
  /** `bash-1`, `bash-2`, … per executor; never reused. */
  readonly id: string
  readonly command: string
  readonly workdir: string
  readonly status: BashTaskStatus
  /** Exit code of the main process once known; null while running or after a signal death. */
  readonly exitCode: number | null
  /** Signal that killed the main process, or the signal the executor used to stop the task; else null. */
  readonly signal: string | null
  /** Epoch ms. */
  readonly startedAt: number
  /** Epoch ms; null while running. */
  readonly endedAt: number | null
  /**
   * Why the executor ended the task when that is not evident from the exit facts (for example
   * `connection to host x lost`, or `failed to start: …`). Never set for an ordinary exit.
   */
  readonly reason?: string
  /**
   * Sandbox facts of the ended task (as `BashRunResult.sandbox`), set before `done` resolves and
   * before `onTaskDone` listeners run. Only executors that confine set it; never set while running.
   */
  readonly sandbox?: SandboxFacts
  /** CPU time of the ended task's processes, in ms, where measured; set with the end, like `sandbox`. */
  readonly cpuMs?: number
  /** The ended task's peak memory, in bytes, where measured; set with the end. */
  readonly peakMemoryBytes?: number
  /** The limits the ended task reached; absent when none. Set with the end. */
  readonly limitReached?: LimitReached
  /**
   * True when the task runs in a pseudo-terminal (started with `interactive`): it takes input
   * (`BashExecutor.write`) and its reads are terminal text. Never changes.
   */
  readonly interactive: boolean
  /** Resolves with this task when it has ended. Never rejects. */
  readonly done: Promise<BashTask>
}

/** What `readOutput` returns: output produced since the previous read, never delivered twice. */
export interface BashTaskRead {
  /** The task (live object). */
  task: BashTask
  /**
   * New stdout; then, if there is new stderr, a newline if needed and `[stderr]\n` + the new stderr.
   * Empty when nothing new arrived. For an interactive task: the terminal's text (see
   * `TerminalView` in dsh-bash-kit): the lines that changed since the last read, or the whole
   * current screen under `[screen <cols>x<rows>]` while a full-screen program runs. Never escape
   * sequences.
   */
  delta: string
  /**
   * The same new output by stream, apart: `delta` is `stdout`, then (when `stderr` is not empty) a
   * newline if needed, `[stderr]\n` and `stderr`. Readers that must tell the executor's `[stderr]`
   * line from output that prints one use these. An interactive task's terminal text is `stdout`
   * (`stderr` is always '').
   */
  streams: { stdout: string; stderr: string }
  /**
   * True when `delta` is a whole screen of a full-screen program (its first line the
   * `[screen <cols>x<rows>]` header), as the terminal view decided from its active buffer; false
   * for everything else, however the text begins. Readers never infer it from the text: a program
   * can print a line that reads `[screen 120x40]`.
   */
  screen: boolean
  /** True when part of the new output fell out of memory before this read (see the spill paths). */
  lossy: boolean
  /** Paths of intact spill files holding the complete streams, when they exist. */
  spillPaths: { stdout?: string; stderr?: string }
}

/**
 * Listener of `onTaskDone`. What it returns is ignored, except that a returned promise's rejection is
 * logged like a throw (never unhandled): an async listener is fine.
 */
export type TaskDoneListener = (task: BashTask) => unknown

/** One of a command's two output streams. */
export type OutputStream = 'stdout' | 'stderr'

/**
 * Which complete output to read: a launch by id (a task id `bash-2`, or a run id `run-3` as
 * `BashRunResult.id` gives it; `stream` defaults to stdout), or the spill path a result or read
 * named (`CollectedOutput.spillPath`, `BashTaskRead.spillPaths`), which says its stream itself.
 */
export type FullOutputRef = { id: string; stream?: OutputStream } | { path: string }

/** A byte range of a complete output. */
export interface ByteRange {
  /** First byte (0-based). */
  offset: number
  /** Most bytes to return (the executor may return fewer: the end of the output, its own cap). */
  length: number
}

/** What the executor keeps of one launch's complete output (`fullOutputs`). */
export interface FullOutputInfo {
  /** The task id for a task (also for a yielded run), else the run id. */
  id: string
  stream: OutputStream
  /** Bytes the output holds now (a running task's grows). */
  size: number
  /** True once the stream ended: `size` is final. */
  complete: boolean
}

/** A range of a complete output (`readFullOutput`). */
export interface FullOutputRead extends FullOutputInfo {
  /** The bytes from `offset`: as many as asked for and available, never more than the cap. */
  data: Uint8Array
  /** The task, when the output is a task's (a yielded run's included). */
  task?: BashTask
  /** How the run ended, when the output is a foreground run's. */
  run?: Pick<BashRunResult, 'exitCode' | 'signal' | 'timedOut'>
}

/** The most bytes one `readFullOutput` returns. */
export const MAX_FULL_OUTPUT_READ = 16 * 1024 * 1024
