import type { BashExecutor, BashTaskRead } from '@deepseek-ai/dsh-bash'

/** How long the program must have printed nothing for bash_input to return (ms). */
export const QUIET_MS = 300
/** How often the task is read while waiting (ms). */
const POLL_MS = 50

/**
 * After input was typed: reads the task until it has been quiet for `QUIET_MS`, `waitMs` passed,
 * the task ended, or `signal` aborted; returns everything read, as one read. Reads of an
 * interactive task are stream pieces (concatenated they are the transcript), except a full-screen
 * program's screen (`[screen …]`), which replaces the screen read before it: only the newest screen
 * is returned, after the lines that came before it.
 */
export async function readAfterInput(bash: BashExecutor, id: string, waitMs: number, signal?: AbortSignal): Promise<BashTaskRead> {
  const started = performance.now()
  let lastChange = started
  const parts: string[] = []
  let lastIsScreen = false
  let read = bash.readOutput(id)
  let lossy = false
  const take = (next: BashTaskRead) => {
    read = next
    lossy ||= next.lossy
    if (next.delta === '') return
    lastChange = performance.now()
    const isScreen = next.delta.startsWith('[screen ')
    if (isScreen && lastIsScreen) parts.pop()
    // A screen starts on a line of its own.
    if (isScreen && parts.length > 0 && !parts[parts.length - 1].endsWith('\n')) parts.push('\n')
    parts.push(next.delta)
    lastIsScreen = isScreen
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
  return { ...read, delta: parts.join(''), lossy }
}
