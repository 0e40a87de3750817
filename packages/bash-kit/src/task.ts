import type { BashTask, BashTaskStatus, LimitReached, ResourceFacts, SandboxFacts } from '@deepseek-ai/dsh-bash'

/** The live public view of a background task; mutated only by the executor. */
export class TaskView implements BashTask {
  status: BashTaskStatus = 'running'
  exitCode: number | null = null
  signal: string | null = null
  readonly startedAt: number
  endedAt: number | null = null
  reason?: string
  sandbox?: SandboxFacts
  cpuMs?: number
  peakMemoryBytes?: number
  limitReached?: LimitReached
  readonly done: Promise<BashTask>
  #resolve!: (task: BashTask) => void

  constructor(
    readonly id: string,
    readonly command: string,
    readonly workdir: string,
    /** Epoch ms; a run that yielded into a task started before the task existed. */
    startedAt = Date.now(),
    /** Runs in a pseudo-terminal (see `BashTask.interactive`). */
    readonly interactive = false,
  ) {
    this.startedAt = startedAt
    this.done = new Promise((resolve) => {
      this.#resolve = resolve
    })
  }

  /** Ends the task once; later calls are ignored. */
  end(
    status: Exclude<BashTaskStatus, 'running'>,
    exitCode: number | null,
    signal: string | null,
    reason?: string,
    sandbox?: SandboxFacts,
    usage?: ResourceFacts,
  ): boolean {
    if (this.status !== 'running') return false
    if (sandbox) this.sandbox = sandbox
    if (usage?.cpuMs !== undefined) this.cpuMs = usage.cpuMs
    if (usage?.peakMemoryBytes !== undefined) this.peakMemoryBytes = usage.peakMemoryBytes
    if (usage?.limitReached) this.limitReached = usage.limitReached
    this.status = status
    this.exitCode = exitCode
    this.signal = signal
    if (reason) this.reason = reason
    this.endedAt = Date.now()
    this.#resolve(this)
    return true
  }

  toJSON(): Omit<BashTask, 'done'> {
    return {
      id: this.id,
      command: this.command,
      workdir: this.workdir,
      status: this.status,
      exitCode: this.exitCode,
      signal: this.signal,
      startedAt: this.startedAt,
      endedAt: this.endedAt,
      interactive: this.interactive,
      ...(this.reason ? { reason: this.reason } : {}),
      ...(this.sandbox ? { sandbox: this.sandbox } : {}),
      ...(this.cpuMs !== undefined ? { cpuMs: this.cpuMs } : {}),
      ...(this.peakMemoryBytes !== undefined ? { peakMemoryBytes: this.peakMemoryBytes } : {}),
      ...(this.limitReached ? { limitReached: this.limitReached } : {}),
    }
  }
}
