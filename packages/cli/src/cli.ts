import { readFileSync } from 'node:fs'
import { parseAgentArgs, parseMcpArgs, parseReplArgs } from './args.js'
import { StartupError, UsageError } from './errors.js'
import { AGENT_HELP, MAIN_HELP, MCP_HELP, REPL_HELP } from './help.js'


const HELP: Record<string, string> = { mcp: MCP_HELP, repl: REPL_HELP, agent: AGENT_HELP }

/** The whole command line; resolves with the exit code. Never throws for usage or startup errors. */
export async function main(argv: string[], io: { out?: NodeJS.WritableStream; err?: NodeJS.WritableStream } = {}): Promise<number> {
  const out = io.out ?? process.stdout
  const err = io.err ?? process.stderr
  const [command, ...rest] = argv
  let name = 'dsh-bash'
  try {
    if (command === undefined) throw new UsageError('missing command (mcp, repl or agent)')
    if (command === '-h' || command === '--help') return write(out, MAIN_HELP), 0
    if (command === '-v' || command === '--version') return write(out, version()), 0
    if (command === 'help') {
      const topic = rest[0]
      if (topic === undefined) return write(out, MAIN_HELP), 0
      if (!HELP[topic]) throw new UsageError(`help: unknown command ${JSON.stringify(topic)}`)
      return write(out, HELP[topic]), 0
    }
    if (command.startsWith('-')) throw new UsageError(`unknown flag ${command}`)
    if (!HELP[command]) throw new UsageError(`unknown command ${JSON.stringify(command)} (expected mcp, repl or agent)`)
    name = `dsh-bash ${command}`
    if (command === 'mcp') {
      const options = parseMcpArgs(rest)
      if (options === 'help') return write(out, MCP_HELP), 0
      // Loaded only now: help and usage errors stay fast.
      const { logToStderr } = await import('./compose.js')
      logToStderr()
      const { runMcp } = await import('./mcp-command.js')
      return await runMcp(options)
    }
    if (command === 'agent') {
      const options = parseAgentArgs(rest, process.env)
      if (options === 'help') return write(out, AGENT_HELP), 0
      const { logToStderr } = await import('./compose.js')
      logToStderr()
      const { runAgent } = await import('./agent-command.js')
      return await runAgent(options)
    }
    const options = parseReplArgs(rest)
    if (options === 'help') return write(out, REPL_HELP), 0
    const { logToStderr } = await import('./compose.js')
    logToStderr()
    const { runRepl } = await import('./repl.js')
    return await runRepl(options)
  } catch (error) {
    if (error instanceof UsageError) {
      const hint = error.command ?? (name === 'dsh-bash' ? undefined : name.slice('dsh-bash '.length))
      write(err, `dsh-bash: ${error.message}\nTry "dsh-bash ${hint ? `${hint} ` : ''}--help".`)
      return 2
    }
    if (error instanceof StartupError) {
      write(err, `dsh-bash: ${error.message}`)
      return 1
    }
    throw error
  }
}

function write(stream: NodeJS.WritableStream, text: string): void {
  stream.write(`${text}\n`)
}

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
  return pkg.version
}
