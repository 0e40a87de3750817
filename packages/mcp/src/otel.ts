/**
 * The calls' spans through OpenTelemetry (the official SDK and OTLP/HTTP exporters), following the
 * semantic conventions for MCP: a SERVER span `tools/call <tool>` per request, parented to the W3C
 * trace context the client put in `params._meta`, and a child span per command.
 *
 * A module of its own (`@deepseek-ai/dsh-mcp/otel`): importing it loads the SDK, so a host imports
 * it only when tracing is asked for (`otlpTracesRequested`, tracing.ts). The exporters read the
 * standard variables themselves (endpoint, headers, timeout, compression, certificates); the batch
 * processor its `OTEL_BSP_*` ones, the provider the sampler's; the resource `OTEL_SERVICE_NAME` and
 * `OTEL_RESOURCE_ATTRIBUTES`.
 */
import { type Attributes, type Context, diag, DiagLogLevel, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources'
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base'
import type { CallTracing, OtlpProtocol, TracedCall, TracedCallStart, TracedCommand } from './tracing.js'

export interface OtelTracingOptions {
  protocol: OtlpProtocol
  /** `service.name` when `OTEL_SERVICE_NAME` (or `OTEL_RESOURCE_ATTRIBUTES`) does not set one. Default `dsh-bash`. */
  serviceName?: string
  serviceVersion?: string
  /**
   * Where the SDK's own errors go (a collector that cannot be reached), each text at most once a
   * minute: it becomes the API's global diag logger (errors only). Default: stderr.
   */
  log?: (message: string) => void
}

/** The names of the spans of commands. */
export const COMMAND_SPAN = { run: 'bash run', task: 'bash task' } as const

const propagator = new W3CTraceContextPropagator()
const getter = {
  get: (carrier: Record<string, string>, key: string) => carrier[key],
  keys: (carrier: Record<string, string>) => Object.keys(carrier),
}

/** A `CallTracing` exporting over OTLP/HTTP (`protocol`), to the endpoint the environment names. */
export function createOtelTracing(options: OtelTracingOptions): CallTracing {
  const log = options.log ?? ((message: string) => void process.stderr.write(`dsh-bash: ${message}\n`))
  diag.setLogger(throttledLogger(log), DiagLogLevel.ERROR)
  const exporter = options.protocol === 'http/json' ? new JsonExporter() : new ProtobufExporter()
  // Later wins: our defaults, then what the environment says (OTEL_SERVICE_NAME above all).
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': options.serviceName ?? 'dsh-bash', ...(options.serviceVersion ? { 'service.version': options.serviceVersion } : {}) }))
    .merge(detectResources({ detectors: [envDetector] }))
  // The -base classes read the standard variables (OTEL_BSP_*, OTEL_TRACES_SAMPLER, span limits).
  const provider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] })
  const tracer = provider.getTracer('@deepseek-ai/dsh-mcp', options.serviceVersion)
  let stopped = false

  return {
    startCall(start: TracedCallStart): TracedCall {
      const parent = remoteParent(start)
      const attributes: Attributes = {
        'mcp.method.name': 'tools/call',
        'gen_ai.operation.name': 'execute_tool',
        'jsonrpc.request.id': start.requestId,
        'network.transport': start.transport === 'http' ? 'tcp' : 'pipe',
      }
      if (start.tool !== undefined) attributes['gen_ai.tool.name'] = start.tool
      if (start.sessionId !== undefined) attributes['mcp.session.id'] = start.sessionId
      if (start.transport === 'http') attributes['network.protocol.name'] = 'http'
      // A name the server does not serve is the client's text: never a span name (cardinality).
      const name = start.tool === undefined ? 'tools/call' : `tools/call ${start.tool}`
      const span = tracer.startSpan(name, { kind: SpanKind.SERVER, startTime: start.startTime, attributes }, parent)
      const inside = trace.setSpan(parent, span)
      return {
        command(command: TracedCommand) {
          if (stopped) return
          const child = tracer.startSpan(COMMAND_SPAN[command.kind], { kind: SpanKind.INTERNAL, startTime: command.startTime, attributes: commandAttributes(command) }, inside)
          child.end(command.endTime)
        },
        end(outcome) {
          if (outcome.isError) {
            // The conventions' value for a CallToolResult with isError; our stable code beside it.
            span.setAttribute('error.type', 'tool_error')
            if (outcome.errorCode !== undefined) span.setAttribute('dsh_bash.error.code', outcome.errorCode)
            span.setStatus({ code: SpanStatusCode.ERROR, ...(outcome.errorCode !== undefined ? { message: outcome.errorCode } : {}) })
          }
          span.end(outcome.endTime)
        },
      }
    },
    async shutdown() {
      if (stopped) return
      stopped = true
      await provider.shutdown()
    },
  }
}

/** The client's trace context from `params._meta` (checked by the W3C propagator), else a new trace. */
function remoteParent(start: TracedCallStart): Context {
  if (start.traceparent === undefined) return ROOT_CONTEXT
  const carrier: Record<string, string> = { traceparent: start.traceparent }
  if (start.tracestate !== undefined) carrier.tracestate = start.tracestate
  return propagator.extract(ROOT_CONTEXT, carrier, getter)
}

function commandAttributes(command: TracedCommand): Attributes {
  const attributes: Attributes = { 'dsh_bash.status': command.status }
  if (command.exitCode !== null) attributes['process.exit.code'] = command.exitCode
  if (command.signal !== null) attributes['dsh_bash.signal'] = command.signal
  if (command.taskId !== null) attributes['dsh_bash.task.id'] = command.taskId
  return attributes
}

/** The SDK's errors (an export that failed, again and again while a collector is down): each text at most once a minute. */
function throttledLogger(log: (message: string) => void) {
  const last = new Map<string, number>()
  const error = (message: string, ...args: unknown[]) => {
    const text = [message, ...args.map((arg) => (arg instanceof Error ? arg.message : typeof arg === 'string' ? arg : JSON.stringify(arg)))].join(' ')
    const now = Date.now()
    if ((last.get(text) ?? -Infinity) > now - 60_000) return
    last.set(text, now)
    log(`tracing: ${text}`)
  }
  const quiet = () => {}
  return { error, warn: quiet, info: quiet, debug: quiet, verbose: quiet }
}
