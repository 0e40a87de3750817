import { randomUUID } from 'node:crypto'
import { type SecretInputAnswer, type SecretInputRequest, visibleText } from '@deepseek-ai/dsh-tools'
import type { Server } from '@modelcontextprotocol/sdk/server/index.js'
import type { RequestId } from '@modelcontextprotocol/sdk/types.js'
import { openSecretPage } from './secret-page.js'

/** Settings of the secret-input page (see `McpHostOptions.secretInput`). */
export interface SecretInputOptions {
  /** Address the one-time page listens on. Default `127.0.0.1`. */
  host: string
  /** How long the page waits for the person after the client accepted (ms). Default 300000 (5 min). */
  timeoutMs: number
}

export const DEFAULT_SECRET_INPUT: SecretInputOptions = { host: '127.0.0.1', timeoutMs: 300_000 }

/**
 * A `decline` or `cancel` of the URL elicitation that comes back sooner than this (ms) was the
 * client's, not a person's: nobody reads the message and decides that fast (Codex declines in about
 * 1 ms; Claude Code in print mode cancels at once). It is never reported as the person's answer.
 */
export const UNASKED_MS = 1000

/** The client answered the elicitation itself (too fast for a person, or with an error): nobody was asked. */
export interface Unasked {
  outcome: 'unasked'
  action: 'decline' | 'cancel' | 'error'
  ms: number
}

/**
 * The longest command line (in characters, after `visibleText`) the elicitation message quotes; a
 * longer one is named with its length, and the page shows it whole. Never cut: a cut line could
 * hide what the program does with the reply.
 */
export const MAX_MESSAGE_COMMAND = 2000

/**
 * The message of the URL elicitation: what the task asks, which program the reply goes to (the
 * command line, whole, or its length when it is longer than `MAX_MESSAGE_COMMAND`: the page shows
 * it), and what that means. Model-controlled parts go through `visibleText`.
 */
export function secretElicitationMessage(request: Pick<SecretInputRequest, 'taskId' | 'prompt' | 'command'>): string {
  const command = visibleText(request.command)
  const length = [...command].length
  const program =
    length <= MAX_MESSAGE_COMMAND
      ? `It goes to this program, which the model started: ${command}`
      : `It goes to a program the model started; its command line (${length} characters) is shown whole on the page.`
  return (
    `Task ${request.taskId} is waiting for your reply: ${visibleText(request.prompt)}\n${program}\n` +
    'Open the page to type it. The reply does not pass through this client or the model, but that program receives it and can print it or pass it on.'
  )
}

/**
 * A person's reply through a URL-mode elicitation (MCP 2025-11-25: secrets MUST NOT be asked for
 * through form mode): a one-time page is opened, its URL elicited; `decline`/`cancel` end it,
 * `accept` (the person agreed to open it) waits for the page's answer, then the client is told the
 * elicitation is complete. A client without URL elicitation: `unavailable` (never a form).
 */
export async function askThroughUrlElicitation(
  server: Server,
  request: SecretInputRequest,
  related: { requestId?: RequestId; signal?: AbortSignal },
  options: SecretInputOptions,
  log: (message: string) => void,
): Promise<SecretInputAnswer | Unasked> {
  if (!server.getClientCapabilities()?.elicitation?.url) return { outcome: 'unavailable' }
  // Nobody is asked without being told where the reply goes.
  if (typeof request.command !== 'string') return { outcome: 'unavailable' }
  const signal = request.signal ?? related.signal
  if (signal?.aborted) return { outcome: 'cancelled' }
  let page
  try {
    page = await openSecretPage({ prompt: request.prompt, taskId: request.taskId, command: request.command, host: options.host })
  } catch (error) {
    log(`secret input: could not open the page: ${error instanceof Error ? error.message : String(error)}`)
    return { outcome: 'unavailable' }
  }
  const elicitationId = randomUUID()
  const asked = Date.now()
  try {
    const result = await server.elicitInput(
      { mode: 'url', message: secretElicitationMessage(request), url: page.url, elicitationId },
      { relatedRequestId: related.requestId, signal },
    )
    const ms = Date.now() - asked
    if (result.action !== 'accept' && ms < UNASKED_MS && !signal?.aborted) {
      log(`secret input: the client answered the URL elicitation for ${request.taskId} with "${result.action}" after ${ms}ms, too fast for a person: nobody was asked`)
      return { outcome: 'unasked', action: result.action, ms }
    }
    if (result.action === 'decline') return { outcome: 'declined' }
    if (result.action !== 'accept') return { outcome: 'cancelled' }
    let timer: NodeJS.Timeout | undefined
    const answer = await Promise.race([
      page.answer,
      new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), options.timeoutMs))),
      new Promise<'aborted'>((resolve) => {
        if (signal?.aborted) resolve('aborted')
        signal?.addEventListener('abort', () => resolve('aborted'), { once: true })
      }),
    ]).finally(() => clearTimeout(timer))
    if (answer === 'timeout' || answer === 'aborted') return { outcome: 'cancelled' }
    // The page is done: the client may close whatever it showed for it.
    await server
      .createElicitationCompletionNotifier(elicitationId, { relatedRequestId: related.requestId })()
      .catch(() => {})
    return answer
  } catch (error) {
    if (signal?.aborted) return { outcome: 'cancelled' }
    log(`secret input: the URL elicitation failed: ${error instanceof Error ? error.message : String(error)}`)
    // An error at once is the client refusing to ask (no handler for URL requests); a late one is not.
    const ms = Date.now() - asked
    return ms < UNASKED_MS ? { outcome: 'unasked', action: 'error', ms } : { outcome: 'unavailable' }
  } finally {
    page.close()
  }
}
