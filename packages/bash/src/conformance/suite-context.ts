import type { it } from 'vitest'
import type { BashExecutor } from '../executor.js'
import type { BashExecRequest, BashRunResult, BashTask } from '../types.js'
import type { ConformanceConfig, ConformanceInstance, ConformanceOptions } from './types.js'

/** A request without its command: what the suite's `run`/`start` shorthands take. */
export type ExtraRequest = Omit<BashExecRequest, 'command'>

/** What every `describe` block of the suite shares: the options, their defaults and shorthands. */
export interface SuiteContext {
  options: ConformanceOptions
  /** The grace period configured on every executor (`options.graceMs`, default 300). */
  graceMs: number
  /** Where commands run (`options.workdir`, default `os.tmpdir()`). */
  workdir: string
  followsEscapees: boolean
  /** `it` when the executor follows escapees, else a function that defines nothing. */
  itEscapees: typeof it
  readSpill(path: string): Promise<Buffer>
  /** Live processes whose command line contains `marker`. */
  count(marker: string): Promise<number>
  /** A fresh executor instance, disposed after the test. */
  create(config?: ConformanceConfig): Promise<ConformanceInstance>
  /** A fresh executor, disposed after the test. */
  executor(config?: ConformanceConfig): Promise<BashExecutor>
  run(bash: BashExecutor, command: string, extra?: ExtraRequest): Promise<BashRunResult>
  start(bash: BashExecutor, command: string, extra?: ExtraRequest): BashTask
  /** Waits until at least one process with the marker is alive. */
  seen(marker: string): Promise<void>
}
