import type { Interface } from 'node:readline'
import { Writable } from 'node:stream'
import { type SecretInputRequest, visibleText } from '@deepseek-ai/dsh-tools'
import type { LineReader } from './lines.js'

/**
 * The REPL's terminal output behind a switch: while `muted`, nothing readline writes reaches the
 * terminal. On a TTY readline runs the terminal raw and echoes each key itself, so muting its
 * output is what turns the echo off for a secret. Only readline writes through this stream: the
 * REPL's own messages go to the real output.
 */
export class MutableOutput extends Writable {
  muted = false

  constructor(private readonly target: NodeJS.WritableStream & { isTTY?: boolean; columns?: number; rows?: number }) {
    super()
    // readline lays out long lines by the terminal's width and listens for resizes.
    const forward = () => this.emit('resize')
    ;(target as NodeJS.EventEmitter).on?.('resize', forward)
    this.once('close', () => (target as NodeJS.EventEmitter).off?.('resize', forward))
  }

  get isTTY(): boolean {
    return Boolean(this.target.isTTY)
  }

  get columns(): number | undefined {
    return this.target.columns
  }

  get rows(): number | undefined {
    return this.target.rows
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.muted) return callback()
    this.target.write(chunk, () => callback())
  }
}

/**
 * Reads one line that is never shown: readline's echo is muted for the read, and the line is kept
 * out of readline's history (arrow-up would otherwise bring it back on screen). On a non-TTY input
 * the line is read plainly; nothing echoes it there either. `null`: the input ended, or `signal`
 * aborted (the read is withdrawn and the echo is back at once).
 */
export async function readHiddenLine(reader: LineReader, rl: Interface, output: MutableOutput, signal?: AbortSignal): Promise<string | null> {
  const lineEditor = rl as unknown as { historySize?: number; history?: string[] }
  const historySize = lineEditor.historySize
  output.muted = true
  if (historySize !== undefined) lineEditor.historySize = 0
  try {
    return await reader.next(signal)
  } finally {
    output.muted = false
    // What was typed before an abort must not stay in the line editor (a redraw would show it).
    if (signal?.aborted) (rl as unknown as { line: string }).line = ''
    if (historySize !== undefined) lineEditor.historySize = historySize
  }
}

/**
 * What the REPL prints before it reads a reply for `bash_input {ask_user}`: the task, what the
 * model says it asks, the whole command line of the program the reply goes to, and what that
 * program can do with it. Model-controlled parts go through `visibleText` (one line each, no
 * escape sequence reaches the terminal); the last line is the prompt the hidden line is read after.
 */
export function secretQuestion(request: Pick<SecretInputRequest, 'taskId' | 'prompt' | 'command'>): string {
  return [
    `task ${request.taskId} needs your reply: ${visibleText(request.prompt)}`,
    `it goes to this program, which the model started: ${visibleText(request.command)}`,
    'that program receives what you type and can print it or pass it on; the model reads what it prints',
    'type it (not shown here); an empty line declines: ',
  ].join('\n')
}
