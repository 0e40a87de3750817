import { mcpErrors } from './errors.js'

/**
 * The seam between the MCP server and a tracer: spans described in the server's own words, with no
 * OpenTelemetry type, so the server loads no tracing code unless its host hands it an
 * implementation (`McpHostOptions.tracing`; the CLI's is `@deepseek-ai/dsh-mcp/otel`, loaded only
 * when an OTLP endpoint is configured).
 */

/** A `tools/call` request, as it arrived. */
export interface TracedCallStart {
  /**
   * The tool's name when the server serves a tool of that name; undefined otherwise (the client
   * chose the text: a tracer must not make it a span name).
   */
  tool: string | undefined
  /** The JSON-RPC id of the request, as a string. */
  requestId: string
  /** The MCP session id (Streamable HTTP's `Mcp-Session-Id`); undefined on stdio, which has none. */
  sessionId: string | undefined
  transport: 'stdio' | 'http'
  /** W3C trace context from the request's `params._meta`, as the client sent it (unchecked). */
  traceparent: string | undefined
  tracestate: string | undefined
  /** When the request arrived (epoch ms). */
  startTime: number
}

/** One command a call ran: a foreground run, or a background task from its start to its end. */
export interface TracedCommand {
  /** `run`: a foreground command (ended, or yielded, by the end of the call); `task`: a background task. */
  kind: 'run' | 'task'
  /** Epoch ms. */
  startTime: number
  endTime: number
  /** The facts' status (`completed`, `failed`, `timed_out`, `killed`, `yielded`). */
  status: string
  exitCode: number | null
  signal: string | null
  taskId: string | null
}

/** A traced call: its server span, and the spans of its commands. */
export interface TracedCall {
  /** A span per command, child of the call's; may come after `end` (a task ends later). */
  command(command: TracedCommand): void
  /** The result is ready: the call's span ends. `errorCode`: the stable code of an error result. */
  end(outcome: { endTime: number; isError: boolean; errorCode?: string }): void
}

/** What the host needs of a tracer. */
export interface CallTracing {
  startCall(start: TracedCallStart): TracedCall
  /** Exports what is pending and stops; later calls are not traced. */
  shutdown(): Promise<void>
}

/** The OTLP protocols this server exports with. */
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number]

/**
 * Whether the standard OpenTelemetry variables ask for traces, and over which protocol: an OTLP
 * endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), unless
 * `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER` names no `otlp`; the protocol from
 * `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`, else `http/protobuf`
 * (the specification's default). Undefined: no tracing. Reads only the environment (loads
 * nothing), so a host can decide before loading any tracing code. Throws a plain Error naming the
 * variable for a protocol it does not export with (`grpc`).
 */
export function otlpTracesRequested(env: Record<string, string | undefined> = process.env): { protocol: OtlpProtocol } | undefined {
  const set = (name: string) => (env[name]?.trim() ?? '') !== ''
  if (!set('OTEL_EXPORTER_OTLP_ENDPOINT') && !set('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT')) return undefined
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined
  const exporters = env.OTEL_TRACES_EXPORTER?.split(',').map((name) => name.trim().toLowerCase()).filter(Boolean)
  if (exporters && exporters.length > 0 && !exporters.includes('otlp')) return undefined
  const variable = set('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL'
  const protocol = env[variable]?.trim() || 'http/protobuf'
  if (!(OTLP_PROTOCOLS as readonly string[]).includes(protocol)) {
    throw mcpErrors.invalidOptions(`${variable}: ${JSON.stringify(protocol)} is not supported; use ${OTLP_PROTOCOLS.join(' or ')}`)
  }
  return { protocol: protocol as OtlpProtocol }
}
