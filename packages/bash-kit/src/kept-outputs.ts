import {
  type BashRunResult,
  type BashTask,
  type ByteRange,
  type FullOutputInfo,
  type FullOutputRead,
  type FullOutputRef,
  MAX_FULL_OUTPUT_READ,
  noFullOutputError,
} from '@deepseek-ai/dsh-bash'
import type { OutputPair } from './output-pair.js'

/** How a kept foreground run ended (a read of its output says so). */
type RunEnd = Pick<BashRunResult, 'exitCode' | 'signal' | 'timedOut'>

/** One launch whose output the executor still holds. */
interface Kept {
  id: string
  output: OutputPair
  task?: BashTask
  ended?: RunEnd
}

/** The fence of complete outputs: an owned launch's output is its owner's; an unowned one is anyone's. */
function mayRead(output: OutputPair, owner: string | undefined): boolean {
  return output.owner === undefined || output.owner === owner
}

/**
 * The complete outputs an executor keeps for the model to read (`readFullOutput`, `fullOutputs`):
 * the spill files of finished foreground runs (the newest `max`, oldest dropped first) and every
 * tracked task's output (`tasks()`, which the task table owns and evicts).
 */
export class KeptOutputs {
  private readonly _runs: { output: OutputPair; ended: RunEnd }[] = []

  constructor(
    private readonly max: number,
    private readonly tasks: () => Iterable<{ view: BashTask; output: OutputPair }>,
  ) {}

  /** A finished run's output: kept when it spilled (a cut result names its file), else disposed now. */
  keepRun(output: OutputPair, result: BashRunResult): void {
    if (!output.spilled) {
      output.dispose()
      return
    }
    this._runs.push({ output, ended: { exitCode: result.exitCode, signal: result.signal, timedOut: result.timedOut } })
    while (this._runs.length > this.max) this._runs.shift()!.output.dispose()
  }

  /** Frees every kept run's output (disposal; task outputs are the table's). */
  disposeRuns(): void {
    for (const run of this._runs) run.output.dispose()
    this._runs.length = 0
  }

  read(ref: FullOutputRef, range: ByteRange, owner: string | undefined): FullOutputRead {
    const what = 'path' in ref ? JSON.stringify(String(ref.path)) : `${JSON.stringify(String(ref.id))} (${ref.stream ?? 'stdout'})`
    const found = this._find(ref, owner)
    if (!found) throw noFullOutputError(what)
    const collector = found.output[found.stream]
    const offset = Math.max(0, Math.floor(range.offset))
    const length = Math.max(0, Math.min(Math.floor(range.length), MAX_FULL_OUTPUT_READ))
    const data = collector.readRange(offset, length)
    if (!data) throw noFullOutputError(what)
    const read: FullOutputRead = { id: found.id, stream: found.stream, size: collector.totalBytes, complete: collector.ended, data }
    if (found.task) read.task = found.task
    if (found.ended) read.run = { ...found.ended }
    return read
  }

  list(owner: string | undefined): FullOutputInfo[] {
    const infos: FullOutputInfo[] = []
    for (const { id, output } of this._all()) {
      if (!mayRead(output, owner)) continue
      for (const stream of ['stdout', 'stderr'] as const) {
        const collector = output[stream]
        if (collector.readRange(0, 0) !== undefined && collector.totalBytes > 0) infos.push({ id, stream, size: collector.totalBytes, complete: collector.ended })
      }
    }
    return infos
  }

  /** Every launch whose output is held: kept foreground runs, then tasks (oldest first). */
  private *_all(): Generator<Kept> {
    for (const run of this._runs) yield { id: run.output.label, output: run.output, ended: run.ended }
    for (const task of this.tasks()) yield { id: task.view.id, output: task.output, task: task.view }
  }

  /** The kept output a ref names, if `owner` may read it. A yielded run answers to its run id and its task id. */
  private _find(ref: FullOutputRef, owner: string | undefined): (Kept & { stream: 'stdout' | 'stderr' }) | undefined {
    for (const kept of this._all()) {
      if (!mayRead(kept.output, owner)) continue
      if ('path' in ref) {
        for (const stream of ['stdout', 'stderr'] as const) {
          if (typeof ref.path === 'string' && kept.output[stream].spillPath === ref.path) return { ...kept, stream }
        }
      } else if (ref.id === kept.id || ref.id === kept.output.label) {
        return { ...kept, stream: ref.stream === 'stderr' ? 'stderr' : 'stdout' }
      }
    }
    return undefined
  }
}
