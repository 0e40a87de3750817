import { afterEach } from 'vitest'

/**
 * Helpers of the conformance suite, exported for executors' own tests so they stop re-declaring
 * them: unique process markers, wait options, instance tracking.
 */

/** How long a "hang" test lets a call run before the suite would call it a hang. */
export const LONG_TIMEOUT_MS = 60_000
/** "Well before the long timeout". */
export const PROMPT_MS = 30_000
/** `vi.waitFor` options for waits on real processes (a loaded 2-core machine is slow, never a failure). */
export const WAIT = { timeout: 20_000, interval: 20 }
/** A timeout for commands that must install a trap before it fires. */
export const TRAP_TIMEOUT_MS = 1_500

/** Resolves after `ms` (for tests that must let a command run on, never as a synchronisation). */
export const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Twelve random digits: a process marker that appears in argv (`sleep 1000.<digits>`). */
export function uniqueMarker(): string {
  let text = ''
  while (text.length < 12) text += Math.floor(Math.random() * 1e9).toString()
  return text.slice(0, 12)
}

/**
 * A marker as shell code, split by an empty quote: the argv of the shell that runs the command does
 * not contain the marker, only the argv of the process it starts (`sleep 1000.<marker>`) does.
 */
export function splitMarker(marker: string): string {
  return `${marker.slice(0, 6)}''${marker.slice(6)}`
}

/** A shell single-quoted literal. */
export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`
}

/** `size` bytes of numbered lines (the last one possibly cut), so that any misplaced byte shows. */
export function numberedBytes(size: number): string {
  let text = ''
  for (let i = 1; text.length < size; i++) text += `line ${i}\n`
  return text.slice(0, size)
}

/** What `trackInstances` returns. */
export interface InstanceTracker<T> {
  /** Remembers `instance` for disposal after the current test; returns it. */
  track(instance: T): T
  /** Disposes every tracked instance now (the afterEach hook does the same); never twice. */
  disposeAll(): Promise<void>
}

/**
 * Instances created during a test, disposed after it: registers a vitest `afterEach` where it is
 * called (top level of a test file or inside a `describe`). `sequential`: one disposal after the
 * other (executors whose disposals contend, like SSH connections to one server); default: all at once.
 */
export function trackInstances<T extends { dispose(): Promise<void> | void }>(options: { sequential?: boolean } = {}): InstanceTracker<T> {
  let instances: T[] = []
  const disposeAll = async () => {
    const created = instances
    instances = []
    if (options.sequential) {
      for (const instance of created) await instance.dispose()
    } else {
      await Promise.all(created.map((instance) => instance.dispose()))
    }
  }
  afterEach(disposeAll)
  return {
    track(instance) {
      instances.push(instance)
      return instance
    },
    disposeAll,
  }
}
