import type { BashExecutor, BashTaskRead } from '@deepseek-ai/dsh-bash'
import type { RenderableRead, TerminalPiece } from './render.js'

/** How long the program must have printed nothing for bash_input to return (ms). */
export const QUIET_MS = 300
/** How often the task is read while waiting (ms). */
const POLL_MS = 50

/**
 * After input was typed: reads the task until it has been quiet for `QUIET_MS`, `waitMs` passed,
 * the task ended, or `signal` aborted; returns everything read, as one read. Reads of an
 * interactive task are terminal pieces (concatenated, line pieces are the transcript), except a
 * full-screen program's screen, which replaces a screen read right before it: only the newest
 * screen is returned, after the lines that came before it. Whether a read is a screen is the
 * terminal view's word (`read.screen`), never the text's: a program printing `[screen …]` lines
 * prints lines.
 */
export async function readAfterInput(bash: BashExecutor, id: string, waitMs: number, signal?: AbortSignal): Promise<RenderableRead> {
  const started = performance.now()
  let lastChange = started
  const pieces: TerminalPiece[] = []
  let read = bash.readOutput(id)
  let lossy = false
  let stderr = ''
  const take = (next: BashTaskRead) => {
    read = next
    lossy ||= next.lossy
    stderr += next.streams.stderr
    const text = next.streams.stdout
    if (text === '' && next.streams.stderr === '') return
    lastChange = performance.now()
    if (text === '') return
    const last = pieces[pieces.length - 1]
    if (next.screen && last?.screen) pieces.pop()
    if (!next.screen && last && !last.screen) last.text += text
    else pieces.push({ text, screen: next.screen })
  }
  take(read)
  const ended = read.task.done.then(() => true)
  for (;;) {
    const now = performance.now()
    if (read.task.status !== 'running' || signal?.aborted) break
    if (now - started >= waitMs || now - lastChange >= QUIET_MS) break
    const wake = Math.min(POLL_MS, waitMs - (now - started))
    await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, Math.max(1, wake)))])
    take(bash.readOutput(id))
  }
  // The task may have ended between the last read and now: what it printed last belongs here.
  if (read.task.status !== 'running') take(bash.readOutput(id))
  const stdout = pieces.map((p) => p.text).join('')
  return { ...read, streams: { stdout, stderr }, screen: false, lossy, pieces }
}
