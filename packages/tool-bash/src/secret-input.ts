import type { Context } from 'cordis'
import { type BashExecutor, notInteractiveError, taskFinishedError, unknownTaskError } from '@deepseek-ai/dsh-bash'
import type { LaterReply, SecretInputAnswer, SecretInputService, ToolCall } from '@deepseek-ai/dsh-tools'
import { codedError } from '@deepseek-ai/dsh-tools'
import { z } from 'zod'
import type { ReplyMask } from './reply-mask.js'
import { statusLine } from './render.js'

/**
 * `bash_input {task_id, ask_user}`: instead of the model's `text`, a person types the reply to a
 * program's prompt (a password, a passphrase) through the host's `secretInput` service; the reply
 * goes straight to the task's terminal (plus Enter) and is never part of any result, error or log.
 */

/** The extra `bash_input` parameter (merged into its schema). */
export const askUserShape = {
  ask_user: z
    .string()
    .optional()
    .describe(
      'Instead of text: ask the user to type the reply themselves (for passwords and other secrets), while the program waits at a prompt with echo off. ' +
        'What to ask, e.g. "Password for sudo". The user is shown this task\'s command line; the reply and Enter go to that program, and the result does not contain the reply.',
    ),
}

/** What the `bash_input` description gains: when and how to use `ask_user`. */
export const ASK_USER_SENTENCE =
  '\n\nFor a password, passphrase or any other secret, do not type it and do not ask for it in chat: once the program shows its password prompt, pass "ask_user" (what to ask, e.g. "Password for sudo") instead of "text". The user is shown the task\'s command line and types the reply; it goes to that program with Enter, and you only learn that it was typed (or that the user declined or no one can be asked; or, when the client cannot ask, that the user is to type it with "dsh-bash reply": tell them, then wait with bash_output). It is refused while the terminal would show what is typed (echo on, or a program that reads each key itself).'

/** The first line of a result after the person typed a reply (the reply itself is never shown). */
export const TYPED_TEXT = '[the user typed a reply; it was sent to the terminal and is not shown]'

/** The end of both waiting lines: what the person does, what the model does, how long it waits. */
const WAITING_TAIL = (seconds: number) =>
  ` so they type it by running "dsh-bash reply" in a terminal on the server's machine; tell them so, then wait with bash_output. The request is withdrawn after ${seconds}s, when the task ends, or when you type text into it]`

/**
 * The first line of a `bash_input {ask_user}` result when nobody could be asked through the client
 * and the question waits for `dsh-bash reply` (a `pending` answer). Never "declined": no one was.
 */
export function waitingText(taskId: string, answer: Extract<SecretInputAnswer, { outcome: 'pending' }>): string {
  const seconds = Math.round(answer.waitMs / 1000)
  if (answer.unasked === 'no-elicitation') return `[waiting for the user's reply to task ${taskId}: this client cannot ask them,${WAITING_TAIL(seconds)}`
  const { action, ms } = answer.unasked
  return `[waiting for the user's reply to task ${taskId}: the client answered the question itself ("${action}" after ${ms}ms) without asking them,${WAITING_TAIL(seconds)}`
}

/** The notices of a waiting request's end, injected into the task's session (exact texts: README). */
export const laterNotices = {
  typed: (taskId: string) => `[reply for task ${taskId}: the user typed it with dsh-bash reply; it was sent to the terminal and is not shown]`,
  declined: (taskId: string) => `[reply for task ${taskId}: the user declined it with dsh-bash reply; nothing was sent]`,
  expired: (taskId: string, waitMs: number) =>
    `[reply for task ${taskId}: no one answered within ${Math.round(waitMs / 1000)}s; the request was withdrawn and nothing was sent]`,
}

/** Stable codes of the `ask_user` outcomes that send nothing. */
export const SECRET_INPUT_ERROR = {
  /** The person refused to answer. */
  declined: 'DSH_INPUT_DECLINED',
  /** The question was withdrawn (the call aborted, the person dismissed it, the input ended). */
  cancelled: 'DSH_INPUT_CANCELLED',
  /** No front end can ask a person (no `secretInput` service, or it cannot reach anyone). */
  unavailable: 'DSH_INPUT_UNAVAILABLE',
  /**
   * The task's terminal would show the reply: echo is on, or the program reads each key itself
   * (raw mode: readline prompts echo for themselves). Nobody was asked, or the reply was dropped.
   */
  echoOn: 'DSH_INPUT_ECHO_ON',
  /** The executor cannot read the task's terminal modes: never assumed off. Nothing was sent. */
  echoUnknown: 'DSH_INPUT_ECHO_UNKNOWN',
  /** `ask_user` and `text` together, neither, or a blank `ask_user`. */
  invalidArguments: 'DSH_INVALID_ARGUMENTS',
} as const

/** The model-facing messages (the pipeline prefixes `Error: `), byte for byte as the README lists them. */
export const secretInputErrors = {
  declined: (id: string) => codedError(SECRET_INPUT_ERROR.declined, `the user declined to type a reply for task ${id}; nothing was sent`),
  cancelled: (id: string) => codedError(SECRET_INPUT_ERROR.cancelled, `the user's reply for task ${id} was cancelled; nothing was sent`),
  unavailable: (id: string) =>
    codedError(SECRET_INPUT_ERROR.unavailable, `no one can type a reply for task ${id}: this front end cannot ask the user for input; nothing was sent`),
  echoOn: (id: string) =>
    codedError(
      SECRET_INPUT_ERROR.echoOn,
      `task ${id} is not waiting for a secret: its terminal shows what is typed (echo is on); ask_user works only at a prompt that turned echo off (read -s, sudo, ssh, passwd); nothing was sent`,
    ),
  rawMode: (id: string) =>
    codedError(
      SECRET_INPUT_ERROR.echoOn,
      `task ${id} is not waiting for a secret: its program reads each key itself (the terminal is in raw mode) and may show it; ask_user works only at a prompt that turned echo off (read -s, sudo, ssh, passwd); nothing was sent`,
    ),
  echoUnknown: (id: string) =>
    codedError(
      SECRET_INPUT_ERROR.echoUnknown,
      `cannot tell whether task ${id} would show what is typed: this executor cannot read its terminal's echo setting; ask_user needs a prompt with echo off; nothing was sent`,
    ),
  both: () => codedError(SECRET_INPUT_ERROR.invalidArguments, 'invalid ask_user: give either text or ask_user, not both'),
  neither: () => codedError(SECRET_INPUT_ERROR.invalidArguments, 'invalid text: expected text or ask_user'),
  blank: () => codedError(SECRET_INPUT_ERROR.invalidArguments, 'invalid ask_user: expected a non-empty string'),
  /** A second answer to one waiting request (told to whoever sent it, never to the model). */
  answered: (id: string) => codedError(SECRET_INPUT_ERROR.cancelled, `the request for a reply to task ${id} was already answered; nothing was sent`),
}

/** Validates the `text` / `ask_user` pair: exactly one, and `ask_user` not blank. */
export function checkInputChoice(args: { text?: string; ask_user?: string }): void {
  if (args.ask_user !== undefined && args.text !== undefined) throw secretInputErrors.both()
  if (args.ask_user === undefined && args.text === undefined) throw secretInputErrors.neither()
  if (args.ask_user !== undefined && args.ask_user.trim() === '') throw secretInputErrors.blank()
}

const MAX_PROMPT = 500

/**
 * Throws unless the task's terminal is as a password prompt leaves it: echo off, line mode on
 * (`TerminalModes`). An executor that cannot tell is refused too: never assumed.
 */
async function assertEchoOff(bash: BashExecutor, taskId: string): Promise<void> {
  const modes = bash.terminalModes ? await bash.terminalModes(taskId) : undefined
  if (!modes) throw secretInputErrors.echoUnknown(taskId)
  if (modes.echo) throw secretInputErrors.echoOn(taskId)
  if (!modes.canonical) throw secretInputErrors.rawMode(taskId)
}

/** What `sendUserReply` did: the reply went to the terminal, or the question waits (`line`: say so). */
export type UserReplyOutcome = { sent: true } | { sent: false; line: string }

/**
 * The checks and the write of one reply, shared by an answer of `ask` and a later one: the echo is
 * read again right before the write (the program may have left its prompt while the person typed),
 * and `mask` has the reply before the terminal can echo it back. Nothing is sent when a check fails.
 */
async function writeReply(bash: BashExecutor, taskId: string, text: string, mask: ReplyMask): Promise<void> {
  await assertEchoOff(bash, taskId)
  // Remembered before the write: the echo can come back before the write resolves.
  mask.remember(taskId, text, (id) => bash.get(id) !== undefined)
  await bash.write(taskId, `${text}\n`)
}

/**
 * The `LaterReply` of one question: a reply typed after `ask` returned (`dsh-bash reply`) goes
 * through the same checks as one typed at once, plus: the task must still run (it may have ended
 * meanwhile). `notify` tells the task's session how it ended (`laterNotices`). Answered once.
 */
function laterReply(bash: BashExecutor, taskId: string, mask: ReplyMask, notify: (text: string) => void, waitMs: () => number): LaterReply {
  let answered = false
  return {
    async send(text) {
      if (answered) throw secretInputErrors.answered(taskId)
      answered = true
      const task = bash.get(taskId)
      if (!task) throw unknownTaskError(taskId)
      if (task.status !== 'running') throw taskFinishedError(taskId, statusLine(task).slice('[status: '.length, -1))
      await writeReply(bash, taskId, text, mask)
      notify(laterNotices.typed(taskId))
    },
    ended(outcome) {
      if (answered) return
      answered = true
      notify(outcome === 'declined' ? laterNotices.declined(taskId) : laterNotices.expired(taskId, waitMs()))
    },
  }
}

/**
 * Asks the person for the reply and writes it (plus `\n`) to the task's terminal. The caller has
 * fenced the task already. Before anyone is asked, the task must exist, be interactive, still run
 * (the executor's own coded errors otherwise) and wait with its terminal's echo off (read twice:
 * before the person is asked, and again right before the reply is written, since the program may
 * have moved on meanwhile): nobody types a password for a task that cannot take it or would show
 * it. The person is told the task's command line (`SecretInputRequest.command`): the reply goes to
 * the program the model started, which can do with it what it likes; echo off only keeps the
 * terminal from printing it. Resolves once the reply is handed to the terminal, after `mask` has
 * it (every later read of the task hides it, should the program print it back), or, when the
 * service answers `pending` (nobody could be asked through the client; the question waits for
 * `dsh-bash reply`), at once with the line that says so: the later reply then goes through the
 * same checks, and `notify` tells the session how it ended. Every outcome that sends nothing is a
 * coded error. The reply is never returned, never in a message.
 */
export async function sendUserReply(
  ctx: Context,
  call: ToolCall,
  taskId: string,
  prompt: string,
  mask: ReplyMask,
  notify: (text: string) => void = () => {},
): Promise<UserReplyOutcome> {
  const bash = ctx.bash
  const task = bash.get(taskId)
  if (!task) throw unknownTaskError(taskId)
  if (!task.interactive) throw notInteractiveError(taskId)
  if (task.status !== 'running') throw taskFinishedError(taskId, statusLine(task).slice('[status: '.length, -1))
  const service = ctx.get('secretInput') as SecretInputService | undefined
  if (typeof service?.ask !== 'function') throw secretInputErrors.unavailable(taskId)
  const sessionId = call.agent?.session?.header?.id
  if (sessionId === undefined) throw secretInputErrors.unavailable(taskId)
  await assertEchoOff(bash, taskId)
  let answer: SecretInputAnswer
  let waitMs = 0
  try {
    answer = await service.ask({
      callId: call.callId,
      sessionId,
      taskId,
      command: task.command,
      prompt: prompt.length > MAX_PROMPT ? `${prompt.slice(0, MAX_PROMPT)}…` : prompt,
      signal: call.signal,
      later: laterReply(bash, taskId, mask, notify, () => waitMs),
    })
  } catch {
    // Never the service's message: it could quote what was typed.
    answer = { outcome: 'unavailable' }
  }
  if (call.signal?.aborted) throw secretInputErrors.cancelled(taskId)
  switch (answer?.outcome) {
    case 'typed':
      if (typeof answer.text !== 'string') throw secretInputErrors.unavailable(taskId)
      // The person took their time: the program may have left its prompt (a timed-out `read -s`
      // followed by `cat`). Read again; what is dropped here was never sent anywhere.
      await writeReply(bash, taskId, answer.text, mask)
      return { sent: true }
    case 'pending':
      if (!(Number.isFinite(answer.waitMs) && answer.waitMs > 0)) throw secretInputErrors.unavailable(taskId)
      waitMs = answer.waitMs
      return { sent: false, line: waitingText(taskId, answer) }
    case 'declined':
      throw secretInputErrors.declined(taskId)
    case 'cancelled':
      throw secretInputErrors.cancelled(taskId)
    default:
      throw secretInputErrors.unavailable(taskId)
  }
}
