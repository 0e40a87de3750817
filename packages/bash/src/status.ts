import type { BashRunResult, BashTask } from './types.js'

/**
 * How a command ended, in one word: the vocabulary of the tools' facts (tool-bash's `status`) and of
 * audit logs, here in the seam so that every reader of an executor's facts words an end the same way.
 * - `completed`: exited 0; `failed`: exited non-zero;
 * - `timed_out`: its timeout fired, however it then ended (also a yielded run's task the executor
 *   ended for its timeout);
 * - `killed`: a signal ended it, ours or its own (also an aborted call, a `kill`).
 */
export type EndStatus = 'completed' | 'failed' | 'timed_out' | 'killed'

/** A foreground run's end. */
export function runEndStatus(result: Pick<BashRunResult, 'timedOut' | 'signal' | 'exitCode'>): EndStatus {
  if (result.timedOut) return 'timed_out'
  if (result.signal) return 'killed'
  return result.exitCode === 0 ? 'completed' : 'failed'
}

/** A task's end, or `running` while it runs. */
export function taskEndStatus(task: Pick<BashTask, 'status' | 'exitCode' | 'reason'>): EndStatus | 'running' {
  if (task.status === 'running') return 'running'
  if (task.status === 'completed') return task.exitCode === 0 ? 'completed' : 'failed'
  // The kit's reason for a yielded run's task ended by its timeout (process-executor.ts).
  return task.reason?.startsWith('timed out after ') ? 'timed_out' : 'killed'
}
