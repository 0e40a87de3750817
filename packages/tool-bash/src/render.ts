import { type BashRunResult, type BashTask, type BashTaskRead, type CollectedOutput, formatSize, type LimitReached, type SandboxFacts } from '@deepseek-ai/dsh-bash'
import { type BudgetStream, layoutWithinBudget, type ResultBudget } from './budget.js'

/**
 * Text shaping only: every string the model reads is built here, byte for byte as the contract
 * (spec §4) gives it. Nothing here knows about processes.
 */

/** Joins status markers after a body: a newline if the body does not end in one, nothing after the last. */
export function appendMarkers(body: string, markers: readonly string[]): string {
  if (markers.length === 0) return body
  return `${body}${body === '' || body.endsWith('\n') ? '' : '\n'}${markers.join('\n')}`
}

function truncationMarker(output: CollectedOutput): string {
  return `[output truncated; full output: ${output.spillPath ?? '(unavailable)'}]`
}

function truncationLine(output: CollectedOutput): string {
  return `\n${truncationMarker(output)}`
}

/** The last line of a foreground result that yielded to the background (spec §6a). */
export function yieldMarker(seconds: number, taskId: string): string {
  return `[still running after ${seconds}s; continues as background task ${taskId}: read it with bash_output, stop it with bash_kill]`
}

/** The streams part of a foreground result: stdout, then the `[stderr]` section, or `(no output)`. */
export function renderStreams(result: Pick<BashRunResult, 'stdout' | 'stderr'>): string {
  let text = result.stdout.text
  if (result.stdout.truncated) text += truncationLine(result.stdout)
  if (result.stderr.text !== '' || result.stderr.truncated) {
    if (text !== '' && !text.endsWith('\n')) text += '\n'
    text += `[stderr]\n${result.stderr.text}`
    if (result.stderr.truncated) text += truncationLine(result.stderr)
  }
  return text === '' ? '(no output)' : text
}

export interface RunMarkerOptions {
  /** Adds the sandbox escalation hint after a denial marker (an escalation is possible). */
  escalationHint?: boolean
}

export interface RenderOptions extends RunMarkerOptions {
  /**
   * Fit the text within this budget, truncation markers first (see budget.ts). Unset: the
   * contract's layout, whatever the size (the executor's memory bound is the only cut).
   */
  budget?: ResultBudget
}

/** The status markers of a foreground result, in contract order. */
export function runMarkers(result: BashRunResult, options: RunMarkerOptions = {}): string[] {
  // A yielded command has not ended: its only marker says where it went.
  if (result.yieldedTo !== undefined) return [yieldMarker(Math.floor(result.durationMs / 1000), result.yieldedTo)]
  const markers: string[] = []
  if (result.leftoverProcesses > 0 && !result.timedOut && !result.aborted) {
    markers.push(
      `[stopped ${result.leftoverProcesses} leftover process(es); use run_in_background for servers and watchers]`,
    )
  }
  markers.push(...sandboxMarkers(result.sandbox, options), ...limitMarkers(result.limitReached))
  if (result.timedOut) markers.push(`[timed out after ${result.timeoutMs}ms]`)
  if (result.signal) markers.push(`[killed by signal: ${result.signal}]`)
  else if (result.exitCode !== null && result.exitCode !== 0) markers.push(`[exit code: ${result.exitCode}]`)
  return markers
}

/**
 * The file denial marker and, where an escalation is possible, the hint; then one network denial
 * marker per host the egress proxy refused (spec §6b). Nothing without a denial.
 */
export function sandboxMarkers(sandbox: SandboxFacts | undefined, options: RunMarkerOptions = {}): string[] {
  if (!sandbox) return []
  const markers: string[] = []
  if (sandbox.accessDenied) {
    markers.push(`[sandbox: file access denied under ${sandbox.mode} mode]`)
    const wider = sandbox.escalations ?? []
    if (options.escalationHint && wider.length > 0) {
      markers.push(
        `[sandbox: to retry with wider access, call bash again with sandbox_permissions: ${wider.map((m) => JSON.stringify(m)).join(' or ')} and a justification]`,
      )
    }
  }
  for (const host of sandbox.deniedHosts ?? []) markers.push(`[sandbox: network access to ${host} denied]`)
  return markers
}

/** The markers of the limits a command reached (spec §6b): memory, then processes. */
export function limitMarkers(reached: LimitReached | undefined): string[] {
  const markers: string[] = []
  if (reached?.memoryBytes !== undefined) markers.push(`[killed: memory limit ${formatSize(reached.memoryBytes)} reached]`)
  if (reached?.processes !== undefined) markers.push(`[process limit ${reached.processes} reached]`)
  return markers
}

/** The whole foreground result text. */
export function renderRunResult(result: BashRunResult, options: RenderOptions = {}): string {
  const markers = runMarkers(result, options)
  const plain = appendMarkers(renderStreams(result), markers)
  if (!options.budget) return plain
  const streams: BudgetStream[] = [
    { text: result.stdout.text, truncated: result.stdout.truncated, marker: truncationMarker(result.stdout), label: '' },
    { text: result.stderr.text, truncated: result.stderr.truncated, marker: truncationMarker(result.stderr), label: '[stderr]\n' },
  ]
  return layoutWithinBudget(streams, plain, markers, options.budget) ?? plain
}

/** `[status: …]` for a task. */
export function statusLine(task: Pick<BashTask, 'status' | 'exitCode' | 'signal' | 'reason'>): string {
  const why = task.reason ? ` (${task.reason})` : ''
  switch (task.status) {
    case 'running':
      return '[status: running]'
    case 'completed':
      return `[status: completed, exit code: ${task.exitCode ?? 'unknown'}]`
    default:
      return task.signal ? `[status: killed by ${task.signal}${why}]` : `[status: killed${why}]`
  }
}

/** The `bash_output` text for one read; an ended task's sandbox markers follow the status line. */
export function renderRead(read: BashTaskRead, options: RenderOptions = {}): string {
  const body = read.delta === '' ? '(no new output)' : read.delta
  const paths = [read.spillPaths.stdout, read.spillPaths.stderr].filter((p): p is string => typeof p === 'string')
  const dropped = `[some output was dropped from memory; full output: ${paths.length > 0 ? paths.join(', ') : '(unavailable)'}]`
  const status = [statusLine(read.task), ...(read.task.status === 'running' ? [] : [...sandboxMarkers(read.task.sandbox, options), ...limitMarkers(read.task.limitReached)])]
  const plain = appendMarkers(body, [...(read.lossy ? [dropped] : []), ...status])
  if (!options.budget) return plain
  // The delta's own [stderr] section is kept apart, so a cut inside it keeps its label.
  const label = '[stderr]\n'
  let out = read.delta
  let err = ''
  if (read.delta.startsWith(label)) {
    out = ''
    err = read.delta.slice(label.length)
  } else {
    const at = read.delta.lastIndexOf(`\n${label}`)
    if (at !== -1) {
      out = read.delta.slice(0, at + 1)
      err = read.delta.slice(at + 1 + label.length)
    }
  }
  const streams: BudgetStream[] = [
    { text: out, truncated: read.lossy, marker: dropped, label: '' },
    { text: err, truncated: false, marker: dropped, label },
  ]
  const laid = layoutWithinBudget(streams, plain, status, options.budget)
  // Both streams share one marker line: say it once.
  return laid === undefined ? plain : laid.replace(`${dropped}\n${dropped}\n`, `${dropped}\n`)
}

/** The completion notice injected into the owning agent; the sandbox and limit markers follow on their own lines. */
export function renderNotice(task: BashTask, options: RunMarkerOptions = {}): string {
  const sentence = `background bash task ${task.id} finished ${statusLine(task)}. Read its output with bash_output.`
  return appendMarkers(sentence, [...sandboxMarkers(task.sandbox, options), ...limitMarkers(task.limitReached)])
}

export const startedText = (id: string) => `started background task ${id}`
export const killedText = (id: string) => `killed background task ${id}`
export const alreadyFinishedText = (id: string) => `task ${id} had already finished`
export const foreignTaskMessage = (id: string) => `task ${id} belongs to another session`
