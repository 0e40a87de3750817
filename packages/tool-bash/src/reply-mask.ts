/**
 * Replies a person typed through `bash_input {ask_user}`, kept so that every later read of the
 * same task shows `[hidden]` where the terminal or the program printed them back (a program that
 * left the echo on, a script that prints what it read). Why every read and not only the one right
 * after the reply: the echo and the program's own output can arrive after that read's quiet window.
 *
 * Lives as long as the plugin that owns it (one per `ToolBash` apply); entries of tasks the
 * executor no longer knows are dropped on the next reply, so it never grows past the live tasks.
 * It filters model-facing text only: the spill file is the raw terminal stream and keeps the reply
 * if the terminal echoed it (README, "Echo").
 */

/** The shortest reply that is hidden: shorter ones would blank out ordinary text. */
export const MIN_HIDDEN_REPLY = 4

/** What stands for a reply in a read, where the terminal or the program printed it. */
export const HIDDEN_REPLY = '[hidden]'

/** At most this many replies are kept per task (the newest): a task asking for more is unusual. */
const MAX_REPLIES_PER_TASK = 16

export class ReplyMask {
  private readonly replies = new Map<string, string[]>()

  /**
   * Remembers `reply` for `taskId`. `isLive(id)` tells which remembered tasks still exist in the
   * executor; the others are forgotten now.
   */
  remember(taskId: string, reply: string, isLive: (id: string) => boolean): void {
    for (const id of this.replies.keys()) if (id !== taskId && !isLive(id)) this.replies.delete(id)
    if (reply.length < MIN_HIDDEN_REPLY) return
    const list = this.replies.get(taskId) ?? []
    if (!list.includes(reply)) list.push(reply)
    // Longest first: a reply that contains another is replaced whole, not around the shorter one.
    list.sort((a, b) => b.length - a.length)
    this.replies.set(taskId, list.slice(0, MAX_REPLIES_PER_TASK))
  }

  /** `text` with every remembered reply of `taskId` replaced by `[hidden]`. */
  hide(taskId: string, text: string): string {
    const list = this.replies.get(taskId)
    if (!list) return text
    for (const reply of list) text = text.split(reply).join(HIDDEN_REPLY)
    return text
  }
}
