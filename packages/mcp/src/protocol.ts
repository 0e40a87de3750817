/**
 * Protocol hygiene in front of the SDK: every malformed request gets a JSON-RPC error and the
 * session keeps serving. The SDK's own checks either stay silent on stdio (a message its schema
 * rejects is dropped, the client waits forever) or answer a non-object `arguments` with -32603 and
 * a raw validation dump; an oversized stdio line ends its transport. These checks run first.
 */

export const PARSE_ERROR = -32700
export const INVALID_REQUEST = -32600
export const INVALID_PARAMS = -32602

/** A JSON-RPC error to send instead of passing a message on. */
export interface Refusal {
  /** The request's id when it could be read; null otherwise. */
  id: string | number | null
  code: number
  message: string
}

/** What to do with one incoming message: pass it on, answer it with an error, or drop it (a bad notification). */
export type Verdict = { pass: true } | { pass: false; refusal?: Refusal }

const PASS: Verdict = { pass: true }

function kind(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Checks one parsed message. Responses and well-formed requests pass; the SDK validates the rest. */
export function checkMessage(message: unknown): Verdict {
  if (Array.isArray(message)) {
    return { pass: false, refusal: { id: null, code: INVALID_REQUEST, message: 'invalid request: JSON-RPC batches are not supported; send one message per line' } }
  }
  if (!isObject(message)) {
    return { pass: false, refusal: { id: null, code: INVALID_REQUEST, message: `invalid request: expected a JSON-RPC message object, got ${kind(message)}` } }
  }
  const id = typeof message.id === 'string' || typeof message.id === 'number' ? message.id : null
  const isRequest = 'id' in message
  // A notification is never answered (JSON-RPC): a malformed one is dropped.
  const refuse = (code: number, text: string): Verdict => (isRequest ? { pass: false, refusal: { id, code, message: text } } : { pass: false })
  if (message.jsonrpc !== '2.0') return refuse(INVALID_REQUEST, 'invalid request: "jsonrpc" must be "2.0"')
  if (!('method' in message)) return PASS // a response to one of our requests
  if (typeof message.method !== 'string') return refuse(INVALID_REQUEST, `invalid request: "method" must be a string, got ${kind(message.method)}`)
  if (isRequest && id === null) return refuse(INVALID_REQUEST, `invalid request: "id" must be a string or a number, got ${kind(message.id)}`)
  const params = message.params
  if (params !== undefined && !isObject(params)) return refuse(INVALID_PARAMS, `invalid params: "params" must be an object, got ${kind(params)}`)
  if (message.method === 'tools/call' && params !== undefined) {
    if (typeof params.name !== 'string') return refuse(INVALID_PARAMS, `invalid params: "name" must be a string, got ${kind(params.name)}`)
    const args = params.arguments
    if (args !== undefined && !isObject(args)) return refuse(INVALID_PARAMS, `invalid params: "arguments" must be an object, got ${kind(args)}`)
  }
  return PASS
}

/** The JSON-RPC error response for a refusal. */
export function errorResponse(refusal: Refusal): { jsonrpc: '2.0'; id: string | number | null; error: { code: number; message: string } } {
  return { jsonrpc: '2.0', id: refusal.id, error: { code: refusal.code, message: refusal.message } }
}

/** Best effort: the id of a request from the first bytes of a line too long to parse. */
export function sniffId(head: string): string | number | null {
  const match = /"id"\s*:\s*(-?\d{1,15}(?![\d.eE])|"(?:[^"\\]|\\.){0,200}")/.exec(head)
  if (!match) return null
  try {
    return JSON.parse(match[1]) as string | number
  } catch {
    return null
  }
}

/**
 * Splits a byte stream into lines, refusing a line longer than `maxBytes` without buffering it:
 * its bytes are skipped up to its newline, and `onOversized` gets its first bytes (to find its id).
 */
export class LineSplitter {
  private _parts: Buffer[] = []
  private _size = 0
  /** Skipping the rest of an oversized line. */
  private _skipping = false

  constructor(
    private readonly maxBytes: number,
    private readonly onLine: (line: string) => void,
    private readonly onOversized: (head: string) => void,
  ) {}

  push(chunk: Buffer): void {
    let start = 0
    while (start < chunk.length) {
      const nl = chunk.indexOf(0x0a, start)
      const end = nl === -1 ? chunk.length : nl
      if (!this._skipping) {
        const piece = chunk.subarray(start, end)
        if (this._size + piece.length > this.maxBytes) {
          const head = Buffer.concat([...this._parts, piece]).subarray(0, 4096).toString('utf8')
          this._parts = []
          this._size = 0
          this._skipping = true
          this.onOversized(head)
        } else {
          this._parts.push(piece)
          this._size += piece.length
        }
      }
      if (nl === -1) return
      if (this._skipping) this._skipping = false
      else {
        const line = Buffer.concat(this._parts).toString('utf8').replace(/\r$/, '')
        this._parts = []
        this._size = 0
        if (line.trim() !== '') this.onLine(line)
      }
      start = nl + 1
    }
  }
}
