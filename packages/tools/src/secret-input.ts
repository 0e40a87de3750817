/**
 * The optional `secretInput` service (`ctx.secretInput`): a person types a reply for a program's
 * prompt (a password, a passphrase) that goes straight to the task's terminal: it is never part of
 * a tool result, a log or a message to the model. But the program that receives it was started by
 * the model, and can print it, store it or send it on: so front ends show the person that program's
 * command line (`command`) and say so. Front ends provide it (the REPL reads a line without echo; the MCP server opens a
 * one-time page through a URL-mode elicitation). Register it with `ctx.set('secretInput', service)`.
 *
 * The reply is a secret: a service never logs it, never puts it in an error message, and drops its
 * reference to it once it has returned it.
 */
export interface SecretInputService {
  ask(request: SecretInputRequest): Promise<SecretInputAnswer>
  /**
   * Optional: the model typed text into the task (`bash_input {text}`), so a pending request for it
   * (`outcome: 'pending'`) is withdrawn: the program has likely left the prompt it was asked for.
   */
  withdraw?(request: { sessionId: string; taskId: string }): void
}

/**
 * How a tool takes a person's answer that comes after `ask` returned `pending` (given by the tool
 * with the request; a service answers `pending` only when it has one).
 */
export interface LaterReply {
  /**
   * Sends a reply the person typed to the task, with the same checks as an answer of `ask` (the task
   * still runs, its terminal still has echo off at a prompt). Resolves once it was written; rejects
   * with a plain Error whose message says why nothing was sent (never holding the reply: it may be
   * shown to the person). Once only: a later call rejects.
   */
  send(text: string): Promise<void>
  /** The request ended without a reply: a person declined it, or it expired after `waitMs`. */
  ended(outcome: 'declined' | 'expired'): void
}

/** What a tool asks a person for. */
export interface SecretInputRequest {
  /** Caller-chosen id of the tool call that asks (front ends relate their question to it). */
  callId: string
  /**
   * The session whose task waits for the reply (the owner token of the task). Front ends route the
   * question to the person of that session; never shown to anyone.
   */
  sessionId: string
  /** The background task the reply goes to, e.g. `bash-3`. */
  taskId: string
  /**
   * The task's command line, as the model wrote it: the program the reply goes to. Raw (newlines,
   * escape sequences, bidi overrides included): front ends show it whole through `visibleText`.
   */
  command: string
  /** What the model says the reply is for (e.g. `Password for sudo`); raw model text: shown through `visibleText`. */
  prompt: string
  /** Cancels the question (the tool call was aborted); the service then answers `cancelled`. */
  signal?: AbortSignal
  /** Where an answer given after `ask` returned goes; without it a service never answers `pending`. */
  later?: LaterReply
}

/**
 * The answer:
 * - `typed`: the person typed `text` (without the Enter; may be empty). Never logged, never shown.
 * - `declined`: the person refused to answer.
 * - `cancelled`: the question was withdrawn (the call aborted, the input ended, the person dismissed it).
 * - `unavailable`: this front end cannot ask anyone (no terminal, a client without URL elicitation).
 * - `pending`: nobody could be asked now, but the question waits (up to `waitMs`) for a person to
 *   answer it some other way (`dsh-bash reply`); the answer then goes through `request.later`.
 *   `unasked` says why the client did not ask: it cannot (`no-elicitation`), or it answered the
 *   elicitation itself, faster than a person could, or failed it (`{action, ms}`: what it answered, how fast).
 */
export type SecretInputAnswer =
  | { outcome: 'typed'; text: string }
  | { outcome: 'declined' }
  | { outcome: 'cancelled' }
  | { outcome: 'unavailable' }
  | { outcome: 'pending'; waitMs: number; unasked: 'no-elicitation' | { action: 'decline' | 'cancel' | 'error'; ms: number } }
