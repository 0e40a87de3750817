import type { Context } from 'cordis'
import type { BashExecutor } from '../executor.js'

/**
 * Settings the suite asks for. Every executor built on `@deepseek-ai/dsh-bash-kit` understands
 * them; the factory merges them over its own base config.
 */
export interface ConformanceConfig {
  cwd?: string
  timeoutMs?: number
  maxTimeoutMs?: number
  maxOutputBytes?: number
  graceMs?: number
  maxSpillBytes?: number
  /** Spill threshold over both streams (bytes of text), as the kit's config. */
  spillAboveBytes?: number
  /** Spill threshold over both streams (lines), as the kit's config. */
  spillAboveLines?: number
  maxFinishedTasks?: number
  keepSpillFiles?: boolean
}

/** One executor created for one test. */
export interface ConformanceInstance {
  /** The cordis context the executor is registered on (`ctx.bash`); plugins are loaded on it. */
  ctx: Context
  /** The executor, as `ctx.bash`. */
  executor: BashExecutor
  /** Unloads the executor plugin and resolves once its disposal is complete. Called at most once per instance by the suite, but must be idempotent. */
  dispose(): Promise<void>
}

export interface ConformanceOptions {
  /** Creates a fresh executor (task ids start at `bash-1`) with `config` merged over the factory's base config. */
  create(config?: ConformanceConfig): Promise<ConformanceInstance>
  /**
   * Number of live processes (zombies excluded) on the executor's machine whose command line
   * contains `marker`.
   */
  countProcesses(marker: string): Promise<number>
  /** An existing directory on the executor's machine, as a physical path (no symlinks). Default: `os.tmpdir()`. */
  workdir?: string
  /** The grace period (ms) between SIGTERM and SIGKILL the suite configures. Default 300. */
  graceMs?: number
  /**
   * False for executors that cannot follow processes that leave the process group (`setsid`,
   * double fork): the escapee tests are skipped. Default true.
   */
  followsEscapees?: boolean
  /** Reads a spill file. Default: the local file system (collectors run in-process). */
  readSpillFile?(path: string): Promise<Buffer>
  /**
   * How to load this executor in a Node.js process of its own (the "server"), so that the suite can
   * start that server with extra open descriptors (fd 3 and fd 200, not close-on-exec, as a parent
   * shell's `exec 200>>log` leaves them) and check that none reaches a command. Omitted (an executor
   * whose commands never share the server's process table, like SSH): that test is not defined.
   */
  serverProcess?: ServerProcessOptions
  /**
   * Interactive tasks (a terminal, `write`): default true. `false` only with a reason, for an
   * executor that cannot do it yet: the suite then checks that it refuses them clearly.
   */
  interactive?: true | { supported: false; reason: string }
}

/** An executor plugin loaded in a separate Node.js process. */
export interface ServerProcessOptions {
  /** Absolute path (or file URL) of the built module that exports the plugin. */
  module: string
  /** The plugin's export name (`LocalExecutor`). */
  exportName: string
  /** The plugin's config (JSON). */
  config: Record<string, unknown>
  /** Where the child runs (it must resolve `cordis` from there). Default: the module's directory. */
  cwd?: string
}

