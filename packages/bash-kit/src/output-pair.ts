import type { Readable } from 'node:stream'
import type { BashTaskRead, CollectedOutput, OutputListener } from '@deepseek-ai/dsh-bash'
import { OutputCollector } from './collector.js'
import { SpillMeter, type SpillThreshold } from './spill-meter.js'

/** How to build the collectors of one launch. */
export interface OutputPairOptions {
  maxBytes: number
  maxSpillBytes: number
  /** The owner's spill directory. */
  dir: string
  /** The launch id (`run-3`, `bash-2`): the spill files are `dsh-bash-<label>-stdout.log` and `-stderr.log`. */
  label: string
  /** The launch's owner token: who may read its complete output (`readFullOutput`). */
  owner?: string
  keepSpillFile: boolean
  /**
   * Output of both streams together past which each stream keeps a spill file although memory
   * holds it whole (spill-meter.ts). Undefined: a stream spills only when it overflows `maxBytes`.
   */
  spillAbove?: SpillThreshold
}

/**
 * A command's stdout and stderr collectors as one object: they are created, fed, ended, read,
 * kept and disposed together.
 */
export class OutputPair {
  readonly stdout: OutputCollector
  readonly stderr: OutputCollector
  /** The launch id the pair was made for (a yielded run's task keeps its run's pair). */
  readonly label: string
  readonly owner: string | undefined

  constructor(options: OutputPairOptions, join: (dir: string, name: string) => string) {
    this.label = options.label
    this.owner = options.owner
    const threshold = options.spillAbove
    // Past the threshold both streams spill: a reader cutting to a budget may cut either of them.
    const meter = threshold && new SpillMeter(threshold, () => (this.stdout.requireSpill(), this.stderr.requireSpill()))
    const collector = (stream: 'stdout' | 'stderr') =>
      new OutputCollector({
        maxBytes: options.maxBytes,
        maxSpillBytes: options.maxSpillBytes,
        spillPath: join(options.dir, `dsh-bash-${options.label}-${stream}.log`),
        keepSpillFile: options.keepSpillFile,
        ...(meter ? { onWrite: (bytes: Buffer) => meter.add(stream, bytes) } : {}),
      })
    this.stdout = collector('stdout')
    this.stderr = collector('stderr')
  }

  /** True when either stream spilled to its file (the pair is then kept for the model to read). */
  get spilled(): boolean {
    return this.stdout.spillPath !== undefined || this.stderr.spillPath !== undefined
  }

  end(): void {
    this.stdout.end()
    this.stderr.end()
  }

  dispose(): void {
    this.stdout.dispose()
    this.stderr.dispose()
  }

  /**
   * Feeds the command's streams into the collectors. The returned drain waits until both are
   * closed, for at most `drainMs` (pipes close when the last holder dies; a holder we cannot see
   * must not hold the call), then destroys them.
   *
   * The window is judged on the loop's turns, not only on the clock: when the loop was blocked
   * past `drainMs` (a loaded machine, a burst of synchronous work), the window's timer fires in the
   * timers phase, before the poll phase has read what the command wrote meanwhile. So on expiry the
   * drain lets poll phases run (setImmediate) as long as data keeps arriving, for at most another
   * `drainMs`, and ends as soon as both streams are closed.
   */
  collect(streams: { stdout: Readable; stderr: Readable }, drainMs: number): () => Promise<void> {
    // Counted in the streams' own events (not through promises): the drain checks them between turns.
    const state = { open: 2, chunks: 0 }
    const closed = Promise.all([collect(streams.stdout, this.stdout, state), collect(streams.stderr, this.stderr, state)])
    return async () => {
      // A per-run timer, cleared as soon as the pipes closed: nothing of the run outlives it.
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, drainMs)
        timer.unref?.()
      })
      try {
        await Promise.race([closed, late])
      } finally {
        clearTimeout(timer)
      }
      const deadline = performance.now() + drainMs
      for (let seen = -1; state.open > 0 && state.chunks !== seen && performance.now() < deadline; ) {
        seen = state.chunks
        // One poll phase: it reads what is buffered in the pipes (and sees their end, if any).
        await new Promise<void>((resolve) => setImmediate(resolve))
      }
      streams.stdout.destroy()
      streams.stderr.destroy()
    }
  }

  /** A background task's read: the new output of both streams, stderr after a `[stderr]` line. */
  read(): Omit<BashTaskRead, 'task'> {
    const out = this.stdout.read()
    const err = this.stderr.read()
    let delta = out.text
    if (err.text) delta += `${delta && !delta.endsWith('\n') ? '\n' : ''}[stderr]\n${err.text}`
    const spillPaths: BashTaskRead['spillPaths'] = {}
    if (this.stdout.spillPath) spillPaths.stdout = this.stdout.spillPath
    if (this.stderr.spillPath) spillPaths.stderr = this.stderr.spillPath
    return { delta, streams: { stdout: out.text, stderr: err.text }, screen: false, lossy: out.lossy || err.lossy, spillPaths }
  }

  /** The output of a yielded run up to now, consumed: the task's next read continues after it. */
  soFar(): { stdout: CollectedOutput; stderr: CollectedOutput } {
    return { stdout: soFar(this.stdout), stderr: soFar(this.stderr) }
  }
}

function soFar(collector: OutputCollector): CollectedOutput {
  const read = collector.read()
  const out: CollectedOutput = {
    text: read.text,
    truncated: read.lossy,
    droppedBytes: read.lossy ? Math.max(0, collector.totalBytes - Buffer.byteLength(read.text)) : 0,
    totalBytes: collector.totalBytes,
  }
  // Also when nothing was dropped: a stream that spilled past the pair's threshold may be cut by
  // the reader (result budget), and the cut names this file.
  if (collector.spillPath) out.spillPath = collector.spillPath
  return out
}

/** Decodes a stream for a live listener (progress); the listener's failures never reach the run. */
export function forwardLive(stream: Readable, name: 'stdout' | 'stderr', listener: OutputListener): void {
  const decoder = new TextDecoder('utf-8', { fatal: false })
  stream.on('data', (chunk: Buffer) => {
    const text = decoder.decode(chunk, { stream: true }).replaceAll('\0', '\uFFFD')
    if (text === '') return
    try {
      listener(name, text)
    } catch {
      // A progress display must not break the command it displays.
    }
  })
}

/** Feeds a stream into a collector; resolves when the stream is closed (never rejects). */
function collect(stream: Readable, collector: OutputCollector, state: { open: number; chunks: number }): Promise<void> {
  return new Promise((resolve) => {
    let done = false
    const finish = () => {
      if (done) return
      done = true
      state.open--
      resolve()
    }
    stream.on('data', (chunk: Buffer) => {
      state.chunks++
      collector.write(chunk)
    })
    stream.once('close', finish)
    stream.once('end', finish)
    stream.once('error', finish)
  })
}
