import { unlinkSync } from 'node:fs'
import { join } from 'node:path'
import type { DeskAnswer, WaitingReply } from './reply-desk.js'
import { readDesks, REPLY_PATH, replyDirectory } from './reply-dir.js'
import { commandOfServer, listenersOf } from './reply-peer.js'

/**
 * The client side of the reply desk, for `dsh-bash reply`: finds the desks of this user's servers
 * (or one MCP HTTP server), lists their waiting questions and answers one. Node only, and `fetch`.
 */

/** One desk to ask. */
export interface DeskConnection {
  /** How the person is told which server it is: `server pid 1234`, or the HTTP server's origin. */
  label: string
  /** The desk's URL (`…/dsh-bash/replies`). */
  url: string
  /** Its bearer token (the desk key, or the MCP server's token). */
  token: string
}

/** A waiting question and the desk it waits at. */
export interface DeskQuestion extends WaitingReply {
  desk: DeskConnection
}

export { replyDirectory }

/**
 * The desks of this user's servers on this machine (`replyDirectory()`, checked private). A desk
 * file whose server is gone is removed. A desk is trusted only when the process listening on its
 * port is the pid its file names and is no command of a dsh-bash server: a command could write a
 * desk file of its own and show the person a harmless command line to collect what they type.
 * Those are left out, each with the reason in `skipped`.
 */
export function localDesks(dir = replyDirectory(), skipped: string[] = []): DeskConnection[] {
  const desks: DeskConnection[] = []
  for (const desk of readDesks(dir)) {
    if (!alive(desk.pid)) {
      try {
        unlinkSync(join(dir, `reply-${desk.pid}-${desk.port}.json`))
      } catch {
        // Someone else removed it.
      }
      continue
    }
    const listeners = listenersOf(desk.port)
    if (!listeners?.includes(desk.pid)) {
      skipped.push(`not asking the desk of pid ${desk.pid}: 127.0.0.1:${desk.port} is ${listeners?.length ? `held by pid ${listeners.join(', ')}` : 'not held by it'}`)
      continue
    }
    const why = commandOfServer(desk.pid)
    if (why) {
      skipped.push(`not asking the desk of pid ${desk.pid}: it runs as a command of a dsh-bash server (${why}), so the model could have started it`)
      continue
    }
    desks.push({ label: `server pid ${desk.pid}`, url: `http://127.0.0.1:${desk.port}${REPLY_PATH}`, token: desk.key })
  }
  return desks
}

/** The desk of an MCP HTTP server, from the URL it printed (`http://HOST:PORT/mcp`). */
export function httpDesk(mcpUrl: string, token: string): DeskConnection {
  const url = new URL(mcpUrl)
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`expected an http(s) URL, got ${JSON.stringify(mcpUrl)}`)
  return { label: url.origin, url: new URL(REPLY_PATH, url).toString(), token }
}

/** The questions waiting at `desk`. Throws an Error with the desk's own message when it refuses. */
export async function listQuestions(desk: DeskConnection): Promise<DeskQuestion[]> {
  const body = (await request(desk, desk.url, { method: 'GET' })) as { waiting?: WaitingReply[] }
  return (body.waiting ?? []).map((question) => ({ ...question, desk }))
}

/** Sends `answer` for question `id`. Throws an Error with the desk's message when nothing was sent. */
export async function answerQuestion(desk: DeskConnection, id: string, answer: DeskAnswer): Promise<{ taskId: string; outcome: 'sent' | 'declined' }> {
  return (await request(desk, `${desk.url}/${encodeURIComponent(id)}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(answer),
  })) as { taskId: string; outcome: 'sent' | 'declined' }
}

async function request(desk: DeskConnection, url: string, init: RequestInit): Promise<unknown> {
  let response: Response
  try {
    response = await fetch(url, { ...init, headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${desk.token}` }, signal: AbortSignal.timeout(30_000) })
  } catch (error) {
    throw new Error(`${desk.label}: cannot reach its reply desk at ${url}: ${(error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : (error as Error).message}`)
  }
  const text = await response.text()
  let body: { error?: string | { message?: string } } | undefined
  try {
    body = JSON.parse(text) as typeof body
  } catch {
    // Reported below.
  }
  // The desk answers `{error: "…"}`; the MCP HTTP server's own refusals (401, 403) are JSON-RPC errors.
  const error = typeof body?.error === 'string' ? body.error : body?.error?.message
  if (!response.ok || !body) throw new Error(`${desk.label}: ${error ?? `HTTP ${response.status}: ${text.slice(0, 200)}`}`)
  return body
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
