import type { Presentation, ToolResult } from '@deepseek-ai/dsh-tools'
import { sandboxedBashParameters, taskParameters } from './schema.js'

/**
 * Pure presenters for UIs. They never throw, whatever shape of arguments or result they get.
 *
 * Which card:
 * - a foreground `bash` call whose arguments fit the schema → a terminal card (command, description,
 *   cwd); its result → the same card with the output and the exit status read back from the markers
 *   (`exitCode`, `signal`, `timedOut`: what `renderRunResult` wrote, read back exactly);
 * - everything else is a generic card: background calls, the task tools, arguments that do not fit
 *   the schema (a replayed old call), and results that are not one plain text block of a finished
 *   command — error results, empty content, non-text or several blocks (a notice or post-execute
 *   context appended), or a call that yielded to the background (it has no exit status yet).
 */

function field(args: unknown, key: string): string | undefined {
  if (!args || typeof args !== 'object') return undefined
  const value = (args as Record<string, unknown>)[key]
  return typeof value === 'string' ? value : undefined
}

/** All text of a result, blocks joined by newlines; non-text blocks are skipped. */
function resultText(result: ToolResult | undefined): string {
  if (!result || !Array.isArray(result.content)) return ''
  return result.content.map((block) => (block && typeof block.text === 'string' ? block.text : '')).join('\n')
}

/** The text of a result that is exactly one text block and no error; otherwise undefined. */
function singleText(result: ToolResult | undefined): string | undefined {
  if (!result || result.isError === true || !Array.isArray(result.content) || result.content.length !== 1) return undefined
  const [block] = result.content
  return block && block.type === 'text' && typeof block.text === 'string' ? block.text : undefined
}

function fitsBash(args: unknown): boolean {
  return sandboxedBashParameters.safeParse(args).success
}

function isBackground(args: unknown): boolean {
  return !!args && typeof args === 'object' && (args as Record<string, unknown>).run_in_background === true
}

function commandTitle(args: unknown): string {
  return field(args, 'command') ?? '(no command)'
}

export function presentBashCall(args: unknown): Presentation {
  const command = commandTitle(args)
  if (isBackground(args)) return { kind: 'generic', title: `bash (background): ${command}`, body: field(args, 'description') }
  if (!fitsBash(args)) return { kind: 'generic', title: `bash: ${command}`, body: field(args, 'description') }
  return { kind: 'terminal', title: command, description: field(args, 'description'), cwd: field(args, 'workdir') }
}

export function presentBashResult(args: unknown, result: ToolResult): Presentation {
  const call = presentBashCall(args)
  const text = singleText(result)
  const status = text === undefined ? undefined : readRunStatus(text)
  if (call.kind !== 'terminal' || text === undefined || status === undefined) {
    return { kind: 'generic', title: call.title, body: resultText(result) }
  }
  return { ...call, output: text, ...status }
}

export function presentTaskCall(tool: string) {
  return (args: unknown): Presentation => ({ kind: 'generic', title: `${tool} ${taskId(args)}` })
}

export function presentTaskResult(tool: string) {
  return (args: unknown, result: ToolResult): Presentation => ({
    kind: 'generic',
    title: `${tool} ${taskId(args)}`,
    body: resultText(result),
  })
}

function taskId(args: unknown): string {
  return taskParameters.safeParse(args).success ? (field(args, 'task_id') as string) : '(no task id)'
}

/** The exit status of a finished foreground command, as its markers state it. */
export interface RunStatus {
  exitCode: number | null
  signal: string | null
  timedOut: boolean
}

// The markers renderRunResult writes last, in contract order: `[timed out after …]`, then the exit
// or signal marker as the very last line. Only those two positions are read, so an output line that
// looks like a marker above them is output, not status.
const EXIT = /^\[exit code: (-?\d+)\]$/
const SIGNAL = /^\[killed by signal: (SIG[A-Z0-9+-]+|\d+)\]$/
const TIMED_OUT = /^\[timed out after \d+ms\]$/
const YIELDED = /^\[still running after \d+s; continues as background task \S+: /

/**
 * Reads the exit status back from a foreground result's text. Undefined when the command has not
 * finished (the call yielded to the background).
 *
 * `readRunStatus(renderRunResult(r))` gives back `r`'s exit code, signal and timeout for every
 * finished result (exit code 0 has no marker). Output cannot pose as those markers: a marker-shaped
 * line of output is escaped (lookalike.ts).
 */
export function readRunStatus(text: string): RunStatus | undefined {
  const lines = text.split('\n')
  let last = lines.length - 1
  if (YIELDED.test(lines[last])) return undefined
  const status: RunStatus = { exitCode: 0, signal: null, timedOut: false }
  const exit = EXIT.exec(lines[last])
  const signal = SIGNAL.exec(lines[last])
  if (exit) status.exitCode = Number(exit[1])
  if (signal) {
    status.exitCode = null
    status.signal = signal[1]
  }
  if (exit || signal) last--
  if (last >= 0 && TIMED_OUT.test(lines[last])) status.timedOut = true
  return status
}
