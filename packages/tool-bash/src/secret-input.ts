import type { Context } from 'cordis'
import { notInteractiveError, taskFinishedError, unknownTaskError } from '@deepseek-ai/dsh-bash'
import type { SecretInputAnswer, SecretInputService, ToolCall } from '@deepseek-ai/dsh-tools'
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
      'Instead of text: ask the user to type the reply themselves (for passwords and other secrets; you never see it). ' +
        'What to ask, e.g. "Password for sudo". The reply and Enter go to the terminal.',
    ),
}

/** What the `bash_input` description gains: when and how to use `ask_user`. */
export const ASK_USER_SENTENCE =
  '\n\nFor a password, passphrase or any other secret, do not type it and do not ask for it in chat: pass "ask_user" (what to ask, e.g. "Password for sudo") instead of "text". The user types the reply, it goes to the terminal with Enter, and you only learn that it was typed (or that the user declined or no one can be asked).'

/** The first line of a result after the person typed a reply (the reply itself is never shown). */
export const TYPED_TEXT = '[the user typed a reply; it was sent to the terminal and is not shown]'

/** Stable codes of the `ask_user` outcomes that send nothing. */
export const SECRET_INPUT_ERROR = {
  /** The person refused to answer. */
  declined: 'DSH_INPUT_DECLINED',
  /** The question was withdrawn (the call aborted, the person dismissed it, the input ended). */
  cancelled: 'DSH_INPUT_CANCELLED',
  /** No front end can ask a person (no `secretInput` service, or it cannot reach anyone). */
  unavailable: 'DSH_INPUT_UNAVAILABLE',
  /** `ask_user` and `text` together, neither, or a blank `ask_user`. */
  invalidArguments: 'DSH_INVALID_ARGUMENTS',
} as const

/** The model-facing messages (the pipeline prefixes `Error: `), byte for byte as the README lists them. */
export const secretInputErrors = {
  declined: (id: string) => codedError(SECRET_INPUT_ERROR.declined, `the user declined to type a reply for task ${id}; nothing was sent`),
  cancelled: (id: string) => codedError(SECRET_INPUT_ERROR.cancelled, `the user's reply for task ${id} was cancelled; nothing was sent`),
  unavailable: (id: string) =>
    codedError(SECRET_INPUT_ERROR.unavailable, `no one can type a reply for task ${id}: this front end cannot ask the user for input; nothing was sent`),
  both: () => codedError(SECRET_INPUT_ERROR.invalidArguments, 'invalid ask_user: give either text or ask_user, not both'),
  neither: () => codedError(SECRET_INPUT_ERROR.invalidArguments, 'invalid text: expected text or ask_user'),
  blank: () => codedError(SECRET_INPUT_ERROR.invalidArguments, 'invalid ask_user: expected a non-empty string'),
}

/** Validates the `text` / `ask_user` pair: exactly one, and `ask_user` not blank. */
export function checkInputChoice(args: { text?: string; ask_user?: string }): void {
  if (args.ask_user !== undefined && args.text !== undefined) throw secretInputErrors.both()
  if (args.ask_user === undefined && args.text === undefined) throw secretInputErrors.neither()
  if (args.ask_user !== undefined && args.ask_user.trim() === '') throw secretInputErrors.blank()
}

const MAX_PROMPT = 500

/**
 * Asks the person for the reply and writes it (plus `\n`) to the task's terminal. The caller has
 * fenced the task already. Before anyone is asked, the task must exist, be interactive and still
 * run (the executor's own coded errors otherwise): nobody types a password for a task that cannot
 * take it. Resolves once the reply is handed to the terminal, after `mask` has it (every later
 * read of the task hides it: a program that did not turn its echo off shows what was typed); every
 * outcome that sends nothing is a coded error. The reply is never returned, never in a message.
 */
export async function sendUserReply(ctx: Context, call: ToolCall, taskId: string, prompt: string, mask: ReplyMask): Promise<void> {
  const bash = ctx.bash
  const task = bash.get(taskId)
  if (!task) throw unknownTaskError(taskId)
  if (!task.interactive) throw notInteractiveError(taskId)
  if (task.status !== 'running') throw taskFinishedError(taskId, statusLine(task).slice('[status: '.length, -1))
  const service = ctx.get('secretInput') as SecretInputService | undefined
  if (typeof service?.ask !== 'function') throw secretInputErrors.unavailable(taskId)
  const sessionId = call.agent?.session?.header?.id
  if (sessionId === undefined) throw secretInputErrors.unavailable(taskId)
  let answer: SecretInputAnswer
  try {
    answer = await service.ask({
      callId: call.callId,
      sessionId,
      taskId,
      prompt: prompt.length > MAX_PROMPT ? `${prompt.slice(0, MAX_PROMPT)}…` : prompt,
      signal: call.signal,
    })
  } catch {
    // Never the service's message: it could quote what was typed.
    answer = { outcome: 'unavailable' }
  }
  if (call.signal?.aborted) throw secretInputErrors.cancelled(taskId)
  switch (answer?.outcome) {
    case 'typed':
      if (typeof answer.text !== 'string') throw secretInputErrors.unavailable(taskId)
      // Remembered before the write: the echo can come back before the write resolves.
      mask.remember(taskId, answer.text, (id) => bash.get(id) !== undefined)
      await bash.write(taskId, `${answer.text}\n`)
      return
    case 'declined':
      throw secretInputErrors.declined(taskId)
    case 'cancelled':
      throw secretInputErrors.cancelled(taskId)
    default:
      throw secretInputErrors.unavailable(taskId)
  }
}
