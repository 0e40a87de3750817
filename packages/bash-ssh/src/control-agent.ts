import type { ClientChannel } from 'ssh2'
import { HEADER_PREFIX } from './scripts.js'

const AGENT_HEADER = `${HEADER_PREFIX}agent`

/**
 * How a report line begins (`still <pid>:<why>:<state>:<name> …`, see `seen` in
 * scripts/control-functions.sh): printed before the answer, it settles nothing. No answer begins so.
 */
export const NOTE_PREFIX = 'still '

/**
 * How a release line begins (`released reused` or `released empty`, see `release` in
 * scripts/control-functions.sh): the request found that the command's process group is no longer
 * provably its own, and will not match or signal it again. Printed before the answer; no answer begins so.
 */
export const RELEASED_PREFIX = 'released '

/**
 * A command's process group as the control scripts may claim it (the group claim, see
 * scripts/control-functions.sh). Never a proof on this side that the group still exists: only the
 * remote scans decide, at each look; this side only forgets it for good once one of them released it.
 */
export interface GroupClaim {
  /** The group's number: the pid the wrapper reported (the command's main process and group leader). */
  readonly pgid: number
  /** That process's start time as the wrapper read it (field 22 of /proc/<pid>/stat, decimal clock ticks since boot). */
  readonly start: string
}

/** What a control request's caller hears before the answer. */
export interface ControlHooks {
  /** Each report line (`still …`, see NOTE_PREFIX). */
  onNote?: (note: string) => void
  /** The request released the group claim; `why` is `reused` or `empty` (see RELEASED_PREFIX). */
  onReleased?: (why: string) => void
}

/** One request waiting for its answer. */
interface Pending extends ControlHooks {
  resolve: (answer: string | undefined) => void
}

/** The request's group fields: `<pgid> <start>`, `0 0` for none (only the marker finds processes then). */
export function groupFields(group: GroupClaim | undefined): string {
  return group ? `${group.pgid} ${group.start}` : '0 0'
}

/** Hands a line printed before the answer to its hook; false when it is not such a line (it is the answer). */
export function dispatchReport(line: string, hooks: ControlHooks): boolean {
  if (line.startsWith(NOTE_PREFIX)) hooks.onNote?.(line)
  else if (line.startsWith(RELEASED_PREFIX)) hooks.onReleased?.(line.slice(RELEASED_PREFIX.length).trim())
  else return false
  return true
}

/**
 * The client side of a control agent: numbered requests, one answer line each (after any number of
 * report and release lines, see NOTE_PREFIX and RELEASED_PREFIX). An answer of
 * undefined means the agent's channel closed first (the caller decides whether the connection is
 * gone or falls back to a one-shot helper).
 */
export class ControlAgent {
  private readonly pending = new Map<number, Pending>()
  private seq = 0
  private buffer = ''
  private closed = false
  /** False until the agent's first line: what a login shell prints before it is skipped. */
  private ready = false

  constructor(private readonly channel: ClientChannel) {
    channel.on('error', () => {})
    channel.stderr.on('data', () => {})
    channel.on('data', (chunk: Buffer) => {
      this.buffer += chunk.toString('utf8')
      let newline: number
      while ((newline = this.buffer.indexOf('\n')) >= 0) {
        const line = this.buffer.slice(0, newline)
        this.buffer = this.buffer.slice(newline + 1)
        if (!this.ready) {
          this.ready = line.endsWith(AGENT_HEADER)
          continue
        }
        const space = line.indexOf(' ')
        const id = Number(line.slice(0, space))
        const pending = this.pending.get(id)
        if (!pending) continue
        const text = line.slice(space + 1)
        if (dispatchReport(text, pending)) continue
        this.pending.delete(id)
        pending.resolve(text)
      }
    })
    channel.once('close', () => {
      this.closed = true
      for (const pending of this.pending.values()) pending.resolve(undefined)
      this.pending.clear()
    })
  }

  /** Sends one request; `hooks` hear its report and release lines until the answer. */
  request(op: string, group: GroupClaim | undefined, marker: string, arg: number, hooks: ControlHooks = {}): Promise<string | undefined> {
    if (this.closed) return Promise.resolve(undefined)
    const id = ++this.seq
    return new Promise((resolve) => {
      this.pending.set(id, { resolve, onNote: hooks.onNote, onReleased: hooks.onReleased })
      this.channel.write(`${id} ${op} ${groupFields(group)} ${marker} ${arg}\n`)
    })
  }
}
