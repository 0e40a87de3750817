import { statSync } from 'node:fs'
import type { Context } from 'cordis'

/**
 * Small helpers every package above the seam had copies of, kept here because they all depend on
 * dsh-bash already (see docs/architecture.md's graph). Nothing here knows about executors.
 */

/**
 * True when `path` is a directory, following symlinks (`stat`, not `lstat`: a symlink to a
 * directory counts). Never throws: a missing or unreadable path is false.
 */
export function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}

/**
 * The text of a thrown value for a message built around it: an `Error`'s message, else `String()`.
 * (dsh-tools' `messageOf` is the model-facing variant, which also reads plain `{message}` objects.)
 */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/**
 * Resolves after `ms`. `unref`: the timer does not keep the process alive (a backoff that must not
 * delay the exit of a process that is done).
 */
export function sleep(ms: number, options: { unref?: boolean } = {}): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms)
    if (options.unref) timer.unref?.()
  })
}

/**
 * A one-shot timer owned by a plugin: bound to `ctx` (cordis `ctx.effect`), so unloading the plugin
 * clears it, and unref'd, so it never keeps the process alive. Returns the cancel function
 * (idempotent; the timer also lets go of the context once it fired). A context that no longer takes
 * effects (its plugin is unloading) gets no timer: the unload does what the timer was for.
 * For long-lived timers an executor owns (idle sessions, reconnection backoff); a per-run timer
 * belongs on the run's AbortController instead.
 */
export function pluginTimer(ctx: Context, ms: number, callback: () => void): () => void {
  let cancel: () => void = () => {}
  try {
    cancel = ctx.effect(() => {
      const timer = setTimeout(() => {
        cancel()
        callback()
      }, ms)
      timer.unref?.()
      return () => clearTimeout(timer)
    })
  } catch {
    // Refused: the context is inactive (unloading or unloaded).
  }
  return () => cancel()
}
