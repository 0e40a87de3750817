import { isAbsolute } from 'node:path'
import { FULL_OUTPUT_URI_PREFIX, type FullOutputRead, type FullOutputRef, fullOutputUri, type OutputStream, parseFullOutputUri } from '@deepseek-ai/dsh-bash'
import { appendMarkers } from './render.js'
import { byteLength, type ResultBudget, MARKER_RESERVE } from './budget.js'
import { escapeOutput } from './lookalike.js'
import { type BashStructured, taskStatus } from './structured.js'
import { toolBashErrors } from './errors.js'

/**
 * `bash_output {task_id, offset, length?, stream?}`: a byte range of a launch's complete output,
 * read through the executor (`readFullOutput`), so the model reads a cut result whole with its own
 * tools whatever machine ran the command (an SSH host, a container, a pod: their spill files are
 * kept where this server runs, out of the commands' reach).
 */

/** Longest range one call returns without a result budget (bytes). */
export const DEFAULT_RANGE_BYTES = 64_000

/** What `task_id` names for a range read: a task or run id, a full-output path, or a `dsh-bash://output/…` URI. */
export function rangeRef(taskId: string, stream: OutputStream | undefined): FullOutputRef {
  if (taskId.startsWith(FULL_OUTPUT_URI_PREFIX)) {
    const parsed = parseFullOutputUri(taskId)
    if (!parsed) throw toolBashErrors.invalidArguments(`invalid task_id: ${JSON.stringify(taskId)} is not a full-output URI (dsh-bash://output/<id>/<stream>)`)
    return { id: parsed.id, stream: parsed.stream }
  }
  if (isAbsolute(taskId)) return { path: taskId }
  return { id: taskId, stream: stream ?? 'stdout' }
}

/** The most a range read returns: the budget minus the room of our own line, else `DEFAULT_RANGE_BYTES`. */
export function rangeLimits(budget: ResultBudget | undefined): { bytes: number; lines: number } {
  if (!budget) return { bytes: DEFAULT_RANGE_BYTES, lines: Number.POSITIVE_INFINITY }
  return { bytes: Math.max(1, budget.bytes - MARKER_RESERVE.bytes), lines: Math.max(1, budget.lines - MARKER_RESERVE.lines) }
}

/**
 * The text and facts of a range read. The bytes are cut to the limits (lines first, then bytes,
 * after escaping lookalike lines), never inside a character at the end; the closing line says which
 * bytes these are and where to go on:
 * `[bytes A-B of N, <stream> of <id>; next offset: B+1]`, `…; end of output]`, or, while the task
 * still writes, `[bytes A-B of N so far, …; the task still runs]`; an offset at or past the end:
 * `[bytes from A: none of N, <stream> of <id>]`.
 */
export function renderRange(read: FullOutputRead, offset: number, limits: { bytes: number; lines: number }): { text: string; structured: BashStructured } {
  let data = Buffer.from(read.data)
  data = data.subarray(0, lineCut(data, limits.lines))
  let text = decode(data)
  // Escaping adds a byte per lookalike line: shrink until the text fits.
  for (let n = data.length; byteLength(text) > limits.bytes && n > 0; ) {
    n = Math.max(0, n - (byteLength(text) - limits.bytes))
    data = data.subarray(0, characterEnd(data.subarray(0, n)))
    text = decode(data)
  }
  const end = offset + data.length
  const of = `${read.size}${read.complete ? '' : ' so far'}, ${read.stream} of ${read.id}`
  const where = end < read.size ? `next offset: ${end}` : read.complete ? 'end of output' : 'the task still runs'
  const marker = data.length > 0 ? `[bytes ${offset}-${end - 1} of ${of}; ${where}]` : `[bytes from ${offset}: none of ${of}]`
  const status = read.task ? taskStatus(read.task) : read.run?.timedOut ? 'timed_out' : read.run?.signal ? 'killed' : read.run?.exitCode === 0 ? 'completed' : 'failed'
  const uri = fullOutputUri(read.id, read.stream)
  return {
    text: appendMarkers(text, [marker]),
    structured: {
      status,
      exitCode: read.task?.exitCode ?? read.run?.exitCode ?? null,
      signal: read.task?.signal ?? read.run?.signal ?? null,
      taskId: read.task?.id ?? null,
      truncated: offset > 0 || end < read.size,
      fullOutput: uri,
      fullOutputs: { stdout: read.stream === 'stdout' ? uri : null, stderr: read.stream === 'stderr' ? uri : null },
      range: { offset, length: data.length, size: read.size, complete: read.complete },
    },
  }
}

/** Output bytes as the model reads them: UTF-8 (a bad start shows as U+FFFD), no NUL, lookalikes escaped. */
function decode(data: Uint8Array): string {
  return escapeOutput(Buffer.from(data).toString('utf8').replaceAll('\0', '\uFFFD'))
}

/** Bytes up to and including the `lines`-th newline (all when fewer), never ending inside a character. */
function lineCut(data: Buffer, lines: number): number {
  let at = -1
  for (let seen = 0; seen < lines; seen++) {
    at = data.indexOf(0x0a, at + 1)
    if (at === -1) return characterEnd(data)
  }
  return at + 1
}

/** The length of `data` without an incomplete UTF-8 character at its end (unless that is all there is). */
function characterEnd(data: Uint8Array): number {
  const n = data.length
  for (let back = 1; back <= Math.min(4, n); back++) {
    const byte = data[n - back]
    if ((byte & 0xc0) === 0x80) continue
    const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1
    return need > back && n - back > 0 ? n - back : n
  }
  return n
}
