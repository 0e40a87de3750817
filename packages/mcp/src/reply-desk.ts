import { randomBytes } from 'node:crypto'
import { type LaterReply, type SecretInputRequest, visibleText } from '@deepseek-ai/dsh-tools'

/**
 * The questions of `bash_input {ask_user}` that no client could put to a person, waiting for
 * `dsh-bash reply` (reply-endpoint.ts serves them). One per task of a session; each waits up to
 * `waitMs`, until its task ends, until the model types into the task, or until its session closes,
 * and is answered once.
 */

/** A waiting question as `dsh-bash reply` lists it. */
export interface WaitingReply {
  /** Its id (random, short: a person may type it). */
  id: string
  /** The task the reply goes to. */
  taskId: string
  /** What the model asks, raw (show it through `visibleText`). */
  prompt: string
  /** The task's command line, raw and whole: the program the reply goes to. */
  command: string
  /** How long it has waited (ms). */
  waitedMs: number
  /** How long it will still wait (ms). */
  leftMs: number
}

/** How an answer went: sent to the task, or declined. Anything else throws (with a message for the person). */
export type DeskAnswer = { action: 'send'; reply: string } | { action: 'decline' }

interface Entry {
  id: string
  sessionId: string
  request: SecretInputRequest
  later: LaterReply
  since: number
  until: number
  timer: NodeJS.Timeout
}

/** The line on the server's stderr when a question starts waiting (exact text: tool-bash README). */
export function waitingAnnouncement(taskId: string, prompt: string, waitMs: number): string {
  return `task ${taskId} waits for your reply (${visibleText(prompt)}): answer it with "dsh-bash reply" in a terminal on this machine within ${Math.round(waitMs / 1000)}s`
}

export class ReplyDesk {
  private readonly entries = new Map<string, Entry>()
  private _endpoints = 0

  /**
   * @param waitMs how long a question waits for a reply
   * @param alive whether a task still runs (a question for a task that ended is dropped)
   * @param log the server's stderr (the announcement; never a reply)
   */
  constructor(
    readonly waitMs: number,
    private readonly alive: (taskId: string) => boolean,
    private readonly log: (message: string) => void,
  ) {}

  /** True while some endpoint serves the desk: only then can a question wait here. */
  get open(): boolean {
    return this._endpoints > 0
  }

  /** An endpoint starts serving the desk; the returned function says it stopped. */
  serve(): () => void {
    this._endpoints++
    let done = false
    return () => {
      if (done) return
      done = true
      this._endpoints--
    }
  }

  /**
   * Puts a question up (or renews the one already waiting for this task of this session: same id,
   * new deadline, the newest `later`). Announced on the server's stderr.
   */
  add(request: SecretInputRequest & { later: LaterReply }): WaitingReply {
    const existing = [...this.entries.values()].find((e) => e.sessionId === request.sessionId && e.request.taskId === request.taskId)
    const id = existing?.id ?? newId()
    if (existing) clearTimeout(existing.timer)
    const now = Date.now()
    const timer = setTimeout(() => this.expire(id), this.waitMs)
    timer.unref()
    const entry: Entry = { id, sessionId: request.sessionId, request, later: request.later, since: existing?.since ?? now, until: now + this.waitMs, timer }
    this.entries.set(id, entry)
    this.log(waitingAnnouncement(request.taskId, request.prompt, this.waitMs))
    return this.view(entry, now)
  }

  /** The questions still waiting (those whose task ended are dropped first). */
  list(): WaitingReply[] {
    const now = Date.now()
    for (const entry of [...this.entries.values()]) if (!this.alive(entry.request.taskId)) this.drop(entry.id)
    return [...this.entries.values()].map((entry) => this.view(entry, now))
  }

  /**
   * A person's answer to question `id`: the reply goes to the task (through tool-bash's checks), or
   * the question is declined. Answered once: the question is gone before the reply is sent, so a
   * second answer (a replay, a race) finds nothing. Throws an Error whose message is for the person.
   */
  async answer(id: string, answer: DeskAnswer): Promise<{ taskId: string; outcome: 'sent' | 'declined' }> {
    const entry = this.entries.get(id)
    if (!entry || !this.alive(entry.request.taskId)) {
      if (entry) this.drop(id)
      throw new Error(`no question ${JSON.stringify(id)} waits for a reply (answered, withdrawn, expired, or its task ended)`)
    }
    this.drop(id)
    if (answer.action === 'decline') {
      entry.later.ended('declined')
      this.log(`task ${entry.request.taskId}: the reply was declined with dsh-bash reply; nothing was sent`)
      return { taskId: entry.request.taskId, outcome: 'declined' }
    }
    await entry.later.send(answer.reply)
    this.log(`task ${entry.request.taskId}: a reply typed with dsh-bash reply was sent to its terminal`)
    return { taskId: entry.request.taskId, outcome: 'sent' }
  }

  /** Withdraws the question for `taskId` of `sessionId`, if any (the model typed into the task). Silent. */
  withdraw(sessionId: string, taskId?: string): void {
    for (const entry of [...this.entries.values()]) {
      if (entry.sessionId === sessionId && (taskId === undefined || entry.request.taskId === taskId)) this.drop(entry.id)
    }
  }

  /** Drops every question (the host closes). */
  close(): void {
    for (const id of [...this.entries.keys()]) this.drop(id)
  }

  private expire(id: string): void {
    const entry = this.entries.get(id)
    if (!entry) return
    this.drop(id)
    if (!this.alive(entry.request.taskId)) return
    entry.later.ended('expired')
    this.log(`task ${entry.request.taskId}: no reply came within ${Math.round(this.waitMs / 1000)}s; the question was withdrawn`)
  }

  private drop(id: string): void {
    const entry = this.entries.get(id)
    if (!entry) return
    clearTimeout(entry.timer)
    this.entries.delete(id)
  }

  private view(entry: Entry, now: number): WaitingReply {
    const { taskId, prompt, command } = entry.request
    return { id: entry.id, taskId, prompt, command, waitedMs: now - entry.since, leftMs: Math.max(0, entry.until - now) }
  }
}

/** Eight characters of base32: easy to type. Not a secret: it names a question; the desk's key and peer check guard it. */
function newId(): string {
  const alphabet = 'abcdefghijkmnpqrstuvwxyz23456789'
  return [...randomBytes(8)].map((b) => alphabet[b & 31]).join('')
}
