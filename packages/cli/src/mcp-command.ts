import type { HttpHandle, StdioHandle } from '@deepseek-ai/dsh-mcp'
import { otlpTracesRequested } from '@deepseek-ai/dsh-mcp/tracing'
import type { McpOptions } from './args.js'
import { hasCode } from '@deepseek-ai/dsh-tools/errors'
import { StartupError, UsageError } from './errors.js'
import { onStopSignals } from './signals.js'
import { configuredToken } from './token.js'

/**
 * The `instructions` of the initialize result: one sentence on what the tools are, then tool-bash's
 * prompt section (markers, background tasks and polling). Clients that defer tools behind a tool
 * search show a model only this and the tool names.
 */
export function mcpInstructions(promptSection: string): string {
  return `These tools run shell commands on the user's machine: bash runs one, bash_output reads what a background task printed since the last read, bash_kill stops a task, bash_input types into an interactive task. ${promptSection}`
}

/** dsh-mcp's `MCP_ERROR.auditLog` (its index is not loaded on the start path). */
const AUDIT_LOG_ERROR = 'DSH_MCP_AUDIT_LOG'

/** The one line `dsh-bash mcp` prints on stderr when stdin is a terminal. */
export const MCP_ON_TERMINAL_HINT =
  'serving MCP on stdin/stdout for an MCP client (JSON-RPC, not typed commands); to try the tools by hand run "dsh-bash repl"; Ctrl-C stops'

/**
 * Runs `dsh-bash mcp`; resolves with the exit code once the server stopped.
 *
 * On stdio the front (`@deepseek-ai/dsh-mcp/front`, Node streams only) answers `initialize` before
 * even the SDK loads (Codex gives a stdio server about a second; bench/startup.mjs), and
 * `tools/list` / `tools/call` wait until the executor, the tools and the policy are loaded. Only what was asked for is imported:
 * the HTTP stack with `--http`, the chosen executor, the policy with `--policy`.
 */
export async function runMcp(options: McpOptions): Promise<number> {
  // On stdio nothing but protocol messages may reach stdout, from the first plugin on. cordis' logger
  // is routed to stderr (composeApp, serveStdio); this also keeps a dependency's or a plugin's stray
  // console.log (ssh2, the Kubernetes client, a host's own plugin) out of the protocol.
  if (!options.http) console.log = console.info = console.debug = (...args: unknown[]) => console.error(...args)
  const log = (message: string) => void process.stderr.write(`dsh-bash: ${message}\n`)
  // First: a bad token file stops the start before anything runs, and DSH_BASH_TOKEN leaves the
  // environment before the launcher helper or any command could inherit it.
  const configured = options.http ? configuredToken(options.tokenFile) : undefined
  // Traces only when the standard variables ask for them; a protocol we cannot speak stops the start.
  let otlp: ReturnType<typeof otlpTracesRequested>
  try {
    otlp = otlpTracesRequested(process.env)
  } catch (error) {
    throw new UsageError((error as Error).message, 'mcp')
  }
  if (options.nice !== undefined) {
    // Before anything starts: the launcher helper, in this session, is the server's too.
    const { applyServerNice } = await import('./priority.js')
    const applied = await applyServerNice(options.nice)
    if (applied.sharedWith > 0) {
      log(`--nice ${applied.nice} applies to this session's autogroup, shared with ${applied.sharedWith} other process${applied.sharedWith === 1 ? '' : 'es'}: start the server with setsid to change only its own`)
    }
  }
  // A person who ran `dsh-bash mcp` in a terminal would otherwise see nothing, and JSON-RPC errors
  // for whatever they type.
  if (!options.http && process.stdin.isTTY) log(MCP_ON_TERMINAL_HINT)
  // Light modules first: on stdio the front reads stdin and answers `initialize` while the rest loads.
  const [{ DEFAULT_SERVER_INFO, StdioFront }, { bashPromptSection }] = await Promise.all([
    import('@deepseek-ai/dsh-mcp/front'),
    import('@deepseek-ai/dsh-tool-bash/prompt'),
  ])
  const instructions = mcpInstructions(bashPromptSection({ yieldAfterMs: options.yieldAfterMs }))
  const front = options.http ? undefined : new StdioFront({ log, early: { serverInfo: DEFAULT_SERVER_INFO, instructions } })
  // A stop signal is ours from here on, before anything can start a command: with the handlers
  // installed only once the server is up, a signal that came while the reply desk was still starting
  // (a call can run by then) ended the server by its default action, and its tasks lived on (CI,
  // under load). One that comes early stops the server as soon as it is up.
  let stopNow: ((signal: string) => void) | undefined
  let earlySignal: string | undefined
  onStopSignals((signal) => (stopNow ? stopNow(signal) : (earlySignal ??= signal)))

  const { McpHost, narrowingModes } = await import('@deepseek-ai/dsh-mcp/host')
  // The OpenTelemetry SDK loads only now and only when asked for, beside the tools; calls wait for it.
  const tracing = otlp
    ? import('@deepseek-ai/dsh-mcp/otel').then(({ createOtelTracing }) => createOtelTracing({ protocol: otlp.protocol, serviceVersion: DEFAULT_SERVER_INFO.version, log }))
    : undefined
  let host: InstanceType<typeof McpHost>
  try {
    host = new McpHost(undefined, {
      cwd: options.workdir,
      log,
      instructions,
      // The executor's own modes up to its default (its capabilities), asked once at bind.
      sessionSandboxModes: narrowingModes,
      ...(options.auditLog ? { audit: { ...options.auditLog, executor: options.executor } } : {}),
      ...(tracing ? { tracing } : {}),
    })
  } catch (error) {
    tracing?.catch(() => {})
    // The audit log could not be opened (or is not private): nothing may run unrecorded.
    if (hasCode(error, AUDIT_LOG_ERROR)) throw new StartupError(`--audit-log: ${(error as Error).message}`)
    throw error
  }
  let stdio: StdioHandle | undefined
  if (front) {
    const { serveStdio } = await import('@deepseek-ai/dsh-mcp/stdio')
    stdio = await serveStdio(host, { front, log })
  }

  const { attach, composeApp } = await import('./compose.js')
  let app: Awaited<ReturnType<typeof composeApp>>
  try {
    app = await composeApp(options)
    await attach(app, 'dsh-mcp', 'the MCP server', (ctx) => host.bind(ctx))
  } catch (error) {
    await stdio?.close()
    throw error
  }

  // The reply desk on this machine: questions a client cannot put to a person wait for `dsh-bash reply`.
  let desk: { close(): Promise<void> } | undefined
  if (host.replies) {
    const { serveReplyDesk } = await import('@deepseek-ai/dsh-mcp/reply-desk')
    try {
      desk = await serveReplyDesk(host.replies)
    } catch (error) {
      log(`no reply desk: ${(error as Error).message}; bash_input ask_user then works only with clients that can ask the user`)
    }
  }

  let server: StdioHandle | HttpHandle
  if (options.http) {
    const { generateToken, serveHttp } = await import('@deepseek-ai/dsh-mcp/http')
    const token = configured?.token ?? generateToken()
    try {
      server = await serveHttp(host, {
        ...options.http,
        token,
        allowedOrigins: options.allowedOrigins,
        idleTimeoutMs: options.idleTimeoutMs,
        log,
      })
    } catch (error) {
      await desk?.close()
      await app.shutdown()
      throw new StartupError(`--http: cannot listen on ${options.http.host}:${options.http.port}: ${(error as Error).message}`)
    }
    process.stderr.write(`dsh-bash: MCP server listening on ${server.url}\n`)
    if (!configured) process.stderr.write(`dsh-bash: bearer token: ${token}\n`)
  } else {
    server = stdio!
  }

  const why = await new Promise<string>((resolve) => {
    // `closed` only ever resolves (stdio.ts, http.ts): nothing to catch.
    void server.closed.then(() => resolve('client closed'))
    stopNow = resolve
    if (earlySignal) resolve(earlySignal)
    // A bug must not leave the tasks running: stop everything, then exit 1.
    process.on('uncaughtException', (error) => {
      process.stderr.write(`dsh-bash: internal error, stopping: ${error.stack ?? error.message}\n`)
      resolve('error')
    })
    process.on('unhandledRejection', (reason) => {
      process.stderr.write(`dsh-bash: unhandled rejection (ignored): ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}\n`)
    })
  })
  await desk?.close()
  await host.close()
  await server.close()
  await app.shutdown()
  return why === 'error' ? 1 : 0
}
