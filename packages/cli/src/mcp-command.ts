import { generateToken, type HttpHandle, McpHost, serveHttp, serveStdio, type StdioHandle } from '@deepseek-ai/dsh-mcp'
import { MODE_ORDER } from '@deepseek-ai/dsh-tool-bash'
import type { McpOptions } from './args.js'
import { attach, composeApp } from './compose.js'
import { StartupError } from './errors.js'
import { onStopSignals } from './signals.js'

/**
 * The sandbox modes a client may choose for its session: the executor's default and every narrower
 * mode (a client can only confine itself further; wider access goes through an approved escalation).
 */
export function sessionModes(defaultMode: string | undefined): string[] {
  const rank = defaultMode === undefined ? -1 : (MODE_ORDER as readonly string[]).indexOf(defaultMode)
  return rank < 0 ? [] : MODE_ORDER.slice(0, rank + 1)
}

/** Runs `dsh-bash mcp`; resolves with the exit code once the server stopped. */
export async function runMcp(options: McpOptions): Promise<number> {
  // On stdio nothing but protocol messages may reach stdout, from the first plugin on.
  if (!options.http) console.log = console.info = console.debug = (...args: unknown[]) => console.error(...args)
  const app = await composeApp(options)
  const host = await attach(
    app,
    'dsh-mcp',
    'the MCP server',
    (ctx) =>
      new McpHost(ctx, {
        cwd: options.workdir,
        sessionSandboxModes: sessionModes(ctx.get('bash')?.sandboxMode),
        log: (message) => process.stderr.write(`dsh-bash: ${message}\n`),
      }),
  )

  let server: StdioHandle | HttpHandle
  if (options.http) {
    const configured = options.token ?? process.env.DSH_BASH_TOKEN ?? undefined
    const token = configured || generateToken()
    try {
      server = await serveHttp(host, { ...options.http, token, allowedOrigins: options.allowedOrigins })
    } catch (error) {
      await app.shutdown()
      throw new StartupError(`--http: cannot listen on ${options.http.host}:${options.http.port}: ${(error as Error).message}`)
    }
    process.stderr.write(`dsh-bash: MCP server listening on ${server.url}\n`)
    if (!configured) process.stderr.write(`dsh-bash: bearer token: ${token}\n`)
  } else {
    server = await serveStdio(host)
  }

  const why = await new Promise<string>((resolve) => {
    server.closed.then(() => resolve('client closed'))
    onStopSignals((signal) => resolve(signal))
    // A bug must not leave the tasks running: stop everything, then exit 1.
    process.on('uncaughtException', (error) => {
      process.stderr.write(`dsh-bash: internal error, stopping: ${error.stack ?? error.message}\n`)
      resolve('error')
    })
    process.on('unhandledRejection', (reason) => {
      process.stderr.write(`dsh-bash: unhandled rejection (ignored): ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}\n`)
    })
  })
  await host.close()
  await server.close()
  await app.shutdown()
  return why === 'error' ? 1 : 0
}
