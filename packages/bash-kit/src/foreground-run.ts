import { BASH_ERROR, type BashExecSpec, type BashRunResult, codedError, type OutputListener } from '@deepseek-ai/dsh-bash'
import type { ExitFacts, LaunchedCommand, LaunchIdentity } from './launched.js'
import { forwardLive, type OutputPair } from './output-pair.js'
import { RunStops, stopOnAbort, stopOnDispose, stopOnTimeout, yieldAfter } from './run-stops.js'
import type { TaskLife } from './task-life.js'
import { usageFields } from './usage-fields.js'

/** One foreground call in flight, as the executor tracks it for disposal. */
export interface ActiveRun {
  /** Set once the launch succeeded. */
  launched?: LaunchedCommand
  /** Set once the launch succeeded: its stop causes (disposal records `dispose` there). */
  stops?: RunStops
  /** Settles when the call is over and everything it launched is released. Never rejects. */
  finished: Promise<void>
}

/** What a foreground run needs of its executor. */
export interface ForegroundHost {
  readonly graceMs: number
  readonly drainMs: number
  /** True once the executor's disposal began. */
  disposing(): boolean
  launch(spec: BashExecSpec, identity: LaunchIdentity): LaunchedCommand | Promise<LaunchedCommand>
  /** A fresh output pair for a launch. */
  output(label: string, owner: string | undefined): OutputPair
  /** Turns the running command into a tracked background task (the yield); it is visible on return. */
  adopt(spec: BashExecSpec, run: LaunchIdentity, startedAt: number, launched: LaunchedCommand, output: OutputPair): TaskLife
  /** The finished result's output: kept for the model to read when it spilled, else disposed. */
  keep(output: OutputPair, result: BashRunResult): void
}

/**
 * One foreground call from launch to result: its timeout, the caller's abort, disposal, leftovers
 * stopped and counted when the main process exits by itself, the drain window, and the yield (the
 * run becomes a background task and the call returns at once). Rejects only for infrastructure
 * failures, a lost connection, and disposal.
 */
export async function runInForeground(host: ForegroundHost, spec: BashExecSpec, identity: LaunchIdentity, active: ActiveRun): Promise<BashRunResult> {
  const output = host.output(identity.id, spec.owner)
  const startedAt = performance.now()
  const startedAtEpoch = Date.now()
  let launched: LaunchedCommand
  try {
    launched = await host.launch(spec, identity)
  } catch (error) {
    output.dispose()
    throw error
  }
  active.launched = launched
  // Once the run yielded, the task owns the output and the launch: this call releases nothing.
  let yielded = false
  try {
    const drain = output.collect(launched, host.drainMs)
    let live = true
    if (spec.onOutput) {
      const listener = spec.onOutput
      // Progress belongs to the call: a yielded command's later output is read with readOutput.
      const forward: OutputListener = (stream, text) => live && listener(stream, text)
      forwardLive(launched.stdout, 'stdout', forward)
      forwardLive(launched.stderr, 'stderr', forward)
    }
    let termination: Promise<void> | undefined
    // The task a yield turned this run into; a `kill` of it that came first wins over the timeout.
    let adopted: TaskLife | undefined
    const stops = new RunStops(() => {
      if (adopted?.stopRequested) return false
      termination ??= launched.terminate(host.graceMs)
      return true
    })
    active.stops = stops
    const cancelTimeout = stopOnTimeout(stops, spec.timeoutMs)
    const detachAbort = stopOnAbort(stops, spec.signal)
    // A disposal that began while the command was being launched.
    if (host.disposing()) stopOnDispose(stops)
    const ending = (async (): Promise<{ exit: ExitFacts; leftoverProcesses: number }> => {
      const exit = await launched.exited
      cancelTimeout()
      detachAbort()
      let leftoverProcesses = 0
      if (!termination) {
        // The main process exited by itself: whatever it left behind is stopped and counted.
        leftoverProcesses = await launched.countLeftovers()
        if (leftoverProcesses > 0) termination = launched.terminate(host.graceMs)
      }
      // Escalation to SIGKILL runs to its end even though the main process is gone already.
      await termination
      await drain()
      output.end()
      return { exit, leftoverProcesses }
    })()

    if (spec.yieldAfterMs !== undefined && spec.yieldAfterMs < spec.timeoutMs) {
      // A command already being stopped (timeout, abort, disposal) ends as a foreground call.
      const yieldTime = yieldAfter(stops, spec.yieldAfterMs, () => !host.disposing())
      const first = await Promise.race([ending.then(() => false), yieldTime.yielded])
      yieldTime.cancel()
      if (first) {
        live = false
        detachAbort()
        yielded = true
        const task = host.adopt(spec, identity, startedAtEpoch, launched, output)
        adopted = task
        // The timer keeps running: the timeout still counts from the command's start.
        void task.followYielded(ending, () => (stops.timedOut ? `timed out after ${spec.timeoutMs}ms` : undefined))
        const so = output.soFar()
        return {
          id: identity.id,
          exitCode: null,
          signal: null,
          timedOut: false,
          aborted: false,
          timeoutMs: spec.timeoutMs,
          stdout: so.stdout,
          stderr: so.stderr,
          durationMs: Math.round(performance.now() - startedAt),
          leftoverProcesses: 0,
          yieldedTo: task.view.id,
        }
      }
    }

    const { exit, leftoverProcesses } = await ending
    const lost = launched.lostReason?.()
    if (lost) throw codedError(BASH_ERROR.connectionLost, lost)
    if (stops.cause === 'dispose' || host.disposing()) throw codedError(BASH_ERROR.disposed, 'the bash executor was disposed while the command ran')
    const err = output.stderr.result()
    const result: BashRunResult = {
      id: identity.id,
      exitCode: exit.exitCode,
      signal: exit.signal,
      timedOut: stops.cause === 'timeout',
      aborted: stops.cause === 'abort',
      timeoutMs: spec.timeoutMs,
      stdout: output.stdout.result(),
      stderr: err,
      durationMs: Math.round(performance.now() - startedAt),
      leftoverProcesses,
    }
    const sandbox = launched.sandboxFacts?.(exit, err)
    if (sandbox) result.sandbox = sandbox
    // Read before `release` (finally, below) frees what they are read from.
    Object.assign(result, usageFields(launched))
    host.keep(output, result)
    return result
  } catch (error) {
    if (!yielded) output.dispose()
    throw error
  } finally {
    if (!yielded) await launched.release()
  }
}
