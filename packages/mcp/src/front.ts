/**
 * The stdio front: owns stdin from the first moment, splits and checks lines (`protocol.ts`), and
 * can answer `initialize` before the SDK is even loaded.
 *
 * Why answer early: loading `@modelcontextprotocol/sdk` 1.32's server (zod 4, ajv) takes most of a
 * second on a busy 2-core machine (bench/startup.mjs: the minimal SDK server is ×3–4 a bare Node
 * start), and Codex `exec` waits about one second for a stdio server before its first model
 * request. This module loads nothing but Node's streams. The SDK server still receives the same
 * `initialize` request later (it records the client's capabilities from it); its own answer to that
 * id is dropped by `serveStdio`, after checking that it says the same as ours.
 */
import type { Readable, Writable } from 'node:stream'
import { checkMessage, errorResponse, INVALID_REQUEST, LineSplitter, PARSE_ERROR, type Refusal, sniffId } from './protocol.js'
import { mcpErrors } from './errors.js'

/** The default of `maxLineBytes`. */
export const DEFAULT_MAX_LINE_BYTES = 10 * 1024 * 1024

/** What the server announces; one definition for the early answer and the SDK server. */
export const SERVER_CAPABILITIES = Object.freeze({ tools: {}, logging: {}, resources: {} })
export const DEFAULT_SERVER_INFO = Object.freeze({ name: 'dsh-bash', version: '0.1.0' })

/**
 * The protocol versions of the SDK in use, newest first, exactly as its server negotiates them (a
 * test compares them with the SDK's `SUPPORTED_PROTOCOL_VERSIONS`, so an SDK update cannot drift).
 */
export const PROTOCOL_VERSIONS = Object.freeze(['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07'])

/**
 * The consumer of checked lines: the line as received and what `JSON.parse` made of it (a consumer
 * that needs the object uses this one instead of parsing the line again; never modify it).
 */
export type FrontSink = (line: string, message: unknown) => void

/** The initialize result the front answers with before the SDK loads. */
export interface EarlyInitialize {
  serverInfo: { name: string; version: string }
  instructions?: string
}

export interface StdioFrontOptions {
  stdin?: Readable
  stdout?: Writable
  /** The longest accepted request line in bytes; a longer one is refused, not fatal. Default 10 MiB. */
  maxLineBytes?: number
  /** Answer `initialize` at once with this (see the module comment). Unset: the SDK answers. */
  early?: EarlyInitialize
  /** Diagnostics (never stdout). */
  log?: (message: string) => void
}

/** The answer the SDK's server gives to `initialize`, computed the same way. */
export function initializeResult(requestedVersion: unknown, early: EarlyInitialize): Record<string, unknown> {
  const protocolVersion = PROTOCOL_VERSIONS.includes(requestedVersion as string) ? requestedVersion : PROTOCOL_VERSIONS[0]
  return {
    protocolVersion,
    capabilities: SERVER_CAPABILITIES,
    serverInfo: early.serverInfo,
    ...(early.instructions ? { instructions: early.instructions } : {}),
  }
}

/**
 * Reads newline-delimited JSON-RPC from stdin. Checked lines wait in a queue until `attach` gives
 * them a consumer (the SDK transport); malformed ones are answered on stdout here.
 */
export class StdioFront {
  readonly stdin: Readable
  readonly stdout: Writable
  readonly maxLineBytes: number
  /** The id of the `initialize` request answered early, once there was one. */
  earlyInitialize: { id: string | number; result: Record<string, unknown> } | undefined
  private readonly _queue: { line: string; message: unknown }[] = []
  private _sink: FrontSink | undefined
  private readonly _splitter: LineSplitter
  private readonly _endListeners = new Set<() => void>()
  private _ended = false
  private readonly _onData = (chunk: Buffer | string) => this._splitter.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk)
  private readonly _onEnd = () => {
    if (this._ended) return
    this._ended = true
    for (const listener of [...this._endListeners]) listener()
  }

  constructor(private readonly options: StdioFrontOptions = {}) {
    this.stdin = options.stdin ?? process.stdin
    this.stdout = options.stdout ?? process.stdout
    this.maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES
    if (!(Number.isInteger(this.maxLineBytes) && this.maxLineBytes > 0)) {
      throw mcpErrors.invalidOptions(`maxLineBytes must be a positive integer, got ${JSON.stringify(this.maxLineBytes)}`)
    }
    this._splitter = new LineSplitter(
      this.maxLineBytes,
      (line) => this._line(line),
      (head) =>
        this.refuse({
          id: sniffId(head),
          code: INVALID_REQUEST,
          message: `request too large: a message line may be at most ${this.maxLineBytes} bytes (the limit of this server's stdio transport); the session goes on`,
        }),
    )
    this.stdin.on('data', this._onData)
    this.stdin.on('end', this._onEnd)
    this.stdin.on('close', this._onEnd)
    // A closed stdout (EPIPE) also means the client is gone.
    this.stdout.on('error', this._onEnd)
  }

  /** True once stdin ended or stdout failed. */
  get ended(): boolean {
    return this._ended
  }

  /** Calls `listener` once when stdin ends (at once if it has). Returns the undo. */
  onEnd(listener: () => void): () => void {
    if (this._ended) {
      listener()
      return () => {}
    }
    this._endListeners.add(listener)
    return () => this._endListeners.delete(listener)
  }

  /** Hands the queued lines, then every later one, to `sink`. Once. */
  attach(sink: FrontSink): void {
    if (this._sink) throw mcpErrors.badState('the stdio front already has a consumer')
    this._sink = sink
    for (const { line, message } of this._queue.splice(0)) sink(line, message)
  }

  /** Stops reading stdin. */
  detach(): void {
    this.stdin.off('data', this._onData)
    this.stdin.off('end', this._onEnd)
    this.stdin.off('close', this._onEnd)
    this.stdout.off('error', this._onEnd)
    this._endListeners.clear()
  }

  /** Answers a malformed message with a JSON-RPC error. */
  refuse(refusal: Refusal): void {
    this.options.log?.(`refused a message: ${refusal.message}`)
    this._write(errorResponse(refusal))
  }

  private _write(message: unknown): void {
    if (this.stdout.writable) this.stdout.write(`${JSON.stringify(message)}\n`)
  }

  private _line(line: string): void {
    let message: unknown
    try {
      message = JSON.parse(line)
    } catch {
      return this.refuse({ id: sniffId(line.slice(0, 4096)), code: PARSE_ERROR, message: 'parse error: the line is not valid JSON' })
    }
    const verdict = checkMessage(message)
    if (!verdict.pass) {
      if (verdict.refusal) this.refuse(verdict.refusal)
      return
    }
    const early = this.options.early
    const request = message as { id?: string | number; method?: string; params?: Record<string, unknown> }
    if (early && !this.earlyInitialize && request.method === 'initialize' && request.id !== undefined && wellFormedInitialize(request.params)) {
      const result = initializeResult(request.params?.protocolVersion, early)
      this.earlyInitialize = { id: request.id, result }
      this._write({ jsonrpc: '2.0', id: request.id, result })
    }
    if (this._sink) this._sink(line, message)
    else this._queue.push({ line, message })
  }
}

/** Only a request the SDK will accept is answered early (else the SDK's error is the one answer). */
function wellFormedInitialize(params: Record<string, unknown> | undefined): boolean {
  const info = params?.clientInfo as Record<string, unknown> | undefined
  return (
    typeof params?.protocolVersion === 'string' &&
    typeof params.capabilities === 'object' &&
    params.capabilities !== null &&
    typeof info === 'object' &&
    info !== null &&
    typeof info.name === 'string' &&
    typeof info.version === 'string'
  )
}
