import { type BashRunResult, type BashTask, type BashTaskRead, type CollectedOutput, formatSize, type LimitReached, type SandboxFacts } from '@deepseek-ai/dsh-bash'
import { type BudgetStream, layoutWithinBudget, type ResultBudget } from './budget.js'
import { escapeOutput } from './lookalike.js'

/**
 * Text shaping only: every string the model reads is built here, byte for byte as the contract
 * (spec §4) gives it. Nothing here knows about processes. Output goes through `escapeOutput`
 * (lookalike.ts) and nothing of ours does: which is which comes from the executor's structure
 * (streams, the terminal's screen flag), never from the text.
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

/** The label line before stderr, in results and reads. */
export const STDERR_LABEL = '[stderr]\n'

/** The streams part of a foreground result: stdout, then the `[stderr]` section, or `(no output)`. */
export function renderStreams(result: Pick<BashRunResult, 'stdout' | 'stderr'>): string {
  let text = escapeOutput(result.stdout.text)
  if (result.stdout.truncated) text += truncationLine(result.stdout)
  if (result.stderr.text !== '' || result.stderr.truncated) {
    if (text !== '' && !text.endsWith('\n')) text += '\n'
    text += `${STDERR_LABEL}${escapeOutput(result.stderr.text)}`
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

/** A rendered result: its text, and which streams the text holds only part of (a cut). */
export interface Rendered {
  text: string
  cut: { stdout: boolean; stderr: boolean }
}

/** The whole foreground result text. */
export function renderRunResult(result: BashRunResult, options: RenderOptions = {}): string {
  return renderRun(result, options).text
}

/** The foreground result text, and what of it is cut (the executor's memory bound, the budget). */
export function renderRun(result: BashRunResult, options: RenderOptions = {}): Rendered {
  const markers = runMarkers(result, options)
  const plain = appendMarkers(renderStreams(result), markers)
  const executorCut = { stdout: result.stdout.truncated, stderr: result.stderr.truncated }
  if (!options.budget) return { text: plain, cut: executorCut }
  const streams: BudgetStream[] = [
    { text: escapeOutput(result.stdout.text), truncated: result.stdout.truncated, marker: truncationMarker(result.stdout), label: '' },
    { text: escapeOutput(result.stderr.text), truncated: result.stderr.truncated, marker: truncationMarker(result.stderr), label: STDERR_LABEL },
  ]
  const laid = layoutWithinBudget(streams, plain, markers, options.budget)
  return laid ? { text: laid.text, cut: { stdout: laid.cut[0], stderr: laid.cut[1] } } : { text: plain, cut: executorCut }
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

/**
 * A piece of terminal text, as the terminal view gave it: lines (a stream piece: pieces in a row
 * concatenate to the transcript) or a whole screen whose first line is the view's
 * `[screen <cols>x<rows>]` header. `screen` comes from the view (`BashTaskRead.screen`), never from
 * the text.
 */
export interface TerminalPiece {
  text: string
  screen: boolean
}

/**
 * A read to render: the executor's read, or several reads of one wait joined (wait.ts). With
 * `pieces`, stdout is those terminal pieces in order (`streams.stdout` is not used); else
 * `streams.stdout` with the read's `screen` flag. stderr is `streams.stderr`.
 */
export type RenderableRead = Pick<BashTaskRead, 'task' | 'streams' | 'screen' | 'lossy' | 'spillPaths'> & { pieces?: readonly TerminalPiece[] }

export interface ReadRenderOptions extends RenderOptions {
  /** Applied to the output before anything of ours is added (the reply mask of a task). */
  mask?: (text: string) => string
}

/** One terminal piece as the model reads it: a screen keeps its header, every output line is escaped. */
function pieceText(piece: TerminalPiece): string {
  if (!piece.screen) return escapeOutput(piece.text)
  const nl = piece.text.indexOf('\n')
  return nl === -1 ? piece.text : piece.text.slice(0, nl + 1) + escapeOutput(piece.text.slice(nl + 1))
}

/** Terminal pieces joined: line pieces run on, a screen stands on lines of its own. */
function joinPieces(pieces: readonly TerminalPiece[]): string {
  let text = ''
  let afterScreen = false
  for (const piece of pieces) {
    if (piece.text === '') continue
    if ((piece.screen || afterScreen) && text !== '' && !text.endsWith('\n')) text += '\n'
    text += pieceText(piece)
    afterScreen = piece.screen
  }
  return text
}

/** A read's output as two parts, stdout and stderr, escaped (and masked); the terminal's text is stdout. */
function readParts(read: RenderableRead, mask: (text: string) => string): { out: string; err: string } {
  const pieces = read.pieces ?? [{ text: read.streams.stdout, screen: read.screen }]
  // The mask runs on the escaped text: a backslash only ever goes before a line start, so a reply
  // found in the output is found there too.
  return { out: mask(joinPieces(pieces)), err: read.streams.stderr === '' ? '' : mask(escapeOutput(read.streams.stderr)) }
}

/** The `bash_output` text for one read; an ended task's sandbox markers follow the status line. */
export function renderRead(read: RenderableRead, options: ReadRenderOptions = {}): string {
  return renderReadCut(read, options).text
}

/** The `bash_output` text for one read, and what of it is cut (lost from memory, or the budget). */
export function renderReadCut(read: RenderableRead, options: ReadRenderOptions = {}): Rendered {
  const { out, err } = readParts(read, options.mask ?? ((text) => text))
  let body = out
  if (err !== '') body += `${body !== '' && !body.endsWith('\n') ? '\n' : ''}${STDERR_LABEL}${err}`
  if (body === '') body = '(no new output)'
  const paths = [read.spillPaths.stdout, read.spillPaths.stderr].filter((p): p is string => typeof p === 'string')
  const dropped = `[some output was dropped from memory; full output: ${paths.length > 0 ? paths.join(', ') : '(unavailable)'}]`
  const status = [statusLine(read.task), ...(read.task.status === 'running' ? [] : [...sandboxMarkers(read.task.sandbox, options), ...limitMarkers(read.task.limitReached)])]
  const plain = appendMarkers(body, [...(read.lossy ? [dropped] : []), ...status])
  // The dropped-output line does not say which stream lost bytes: both count as cut.
  const lost = { stdout: read.lossy, stderr: read.lossy && err !== '' }
  if (!options.budget) return { text: plain, cut: lost }
  // The streams stay apart, so a cut inside stderr keeps its label.
  const streams: BudgetStream[] = [
    { text: out, truncated: read.lossy, marker: dropped, label: '' },
    { text: err, truncated: false, marker: dropped, label: STDERR_LABEL },
  ]
  const laid = layoutWithinBudget(streams, plain, status, options.budget)
  if (laid === undefined) return { text: plain, cut: lost }
  // Both streams share one marker line: say it once.
  return { text: laid.text.replace(`${dropped}\n${dropped}\n`, `${dropped}\n`), cut: { stdout: laid.cut[0], stderr: laid.cut[1] || lost.stderr } }
}

/** The completion notice injected into the owning agent; the sandbox and limit markers follow on their own lines. */
export function renderNotice(task: BashTask, options: RunMarkerOptions = {}): string {
  const sentence = `background bash task ${task.id} finished ${statusLine(task)}. Read its output with bash_output.`
  return appendMarkers(sentence, [...sandboxMarkers(task.sandbox, options), ...limitMarkers(task.limitReached)])
}

export const startedText = (id: string) => `started background task ${id}`
export const killedText = (id: string) => `killed background task ${id}`
export const alreadyFinishedText = (id: string) => `task ${id} had already finished`
