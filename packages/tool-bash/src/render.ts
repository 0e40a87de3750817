import type { BashRunResult, BashTask, BashTaskRead, CollectedOutput, SandboxFacts } from '@deepseek-ai/dsh-bash'

/**
 * Text shaping only: every string the model reads is built here, byte for byte as the contract
 * (spec §4) gives it. Nothing here knows about processes.
 */

/** Joins status markers after a body: a newline if the body does not end in one, nothing after the last. */
export function appendMarkers(body: string, markers: readonly string[]): string {
  if (markers.length === 0) return body
  return `${body}${body === '' || body.endsWith('\n') ? '' : '\n'}${markers.join('\n')}`
}

function truncationLine(output: CollectedOutput): string {
  return `\n[output truncated; full output: ${output.spillPath ?? '(unavailable)'}]`
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

/** The status markers of a foreground result, in contract order. */
export function runMarkers(result: BashRunResult, options: RunMarkerOptions = {}): string[] {
  const markers: string[] = []
  if (result.leftoverProcesses > 0 && !result.timedOut && !result.aborted) {
    markers.push(
      `[stopped ${result.leftoverProcesses} leftover process(es); use run_in_background for servers and watchers]`,
    )
  }
  markers.push(...sandboxMarkers(result.sandbox, options))
  if (result.timedOut) markers.push(`[timed out after ${result.timeoutMs}ms]`)
  if (result.signal) markers.push(`[killed by signal: ${result.signal}]`)
  else if (result.exitCode !== null && result.exitCode !== 0) markers.push(`[exit code: ${result.exitCode}]`)
  return markers
}

/** The denial marker and, where an escalation is possible, the hint; nothing without a denial. */
export function sandboxMarkers(sandbox: SandboxFacts | undefined, options: RunMarkerOptions = {}): string[] {
  if (!sandbox?.accessDenied) return []
  const markers = [`[sandbox: file access denied under ${sandbox.mode} mode]`]
  const wider = sandbox.escalations ?? []
  if (options.escalationHint && wider.length > 0) {
    markers.push(
      `[sandbox: to retry with wider access, call bash again with sandbox_permissions: ${wider.map((m) => JSON.stringify(m)).join(' or ')} and a justification]`,
    )
  }
  return markers
}

/** The whole foreground result text. */
export function renderRunResult(result: BashRunResult, options: RunMarkerOptions = {}): string {
  return appendMarkers(renderStreams(result), runMarkers(result, options))
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
export function renderRead(read: BashTaskRead, options: RunMarkerOptions = {}): string {
  const body = read.delta === '' ? '(no new output)' : read.delta
  const lines: string[] = []
  if (read.lossy) {
    const paths = [read.spillPaths.stdout, read.spillPaths.stderr].filter((p): p is string => typeof p === 'string')
    lines.push(`[some output was dropped from memory; full output: ${paths.length > 0 ? paths.join(', ') : '(unavailable)'}]`)
  }
  lines.push(statusLine(read.task))
  if (read.task.status !== 'running') lines.push(...sandboxMarkers(read.task.sandbox, options))
  return appendMarkers(body, lines)
}

/** The completion notice injected into the owning agent; the sandbox markers follow on their own lines. */
export function renderNotice(task: BashTask, options: RunMarkerOptions = {}): string {
  const sentence = `background bash task ${task.id} finished ${statusLine(task)}. Read its output with bash_output.`
  return appendMarkers(sentence, sandboxMarkers(task.sandbox, options))
}

export const startedText = (id: string) => `started background task ${id}`
export const killedText = (id: string) => `killed background task ${id}`
export const alreadyFinishedText = (id: string) => `task ${id} had already finished`
export const foreignTaskMessage = (id: string) => `task ${id} belongs to another session`
