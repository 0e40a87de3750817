import { readFileSync } from 'node:fs'
import { parseMcpArgs, parseReplArgs, UsageError } from './args.js'
import { logToStderr, StartupError } from './compose.js'
import { MCP_HELP, runMcp } from './mcp-command.js'
import { REPL_HELP, runRepl } from './repl.js'

export const MAIN_HELP = `Usage: dsh-bash <command> [flags]

The bash tools (bash, bash_output, bash_kill) for models and people.

Commands:
  mcp     serve the tools to MCP clients (stdio, or Streamable HTTP with --http HOST:PORT)
  repl    play the model: run commands through the tools and read exactly what a model reads
  help    show help for a command (dsh-bash help mcp)

Flags:
  -h, --help      show this help
  -v, --version   print the version

Run "dsh-bash <command> --help" for the flags of a command.
Exit codes: 0 ok, 1 runtime failure, 2 usage error.`

const HELP: Record<string, string> = { mcp: MCP_HELP, repl: REPL_HELP }

/** The whole command line; resolves with the exit code. Never throws for usage or startup errors. */
export async function main(argv: string[], io: { out?: NodeJS.WritableStream; err?: NodeJS.WritableStream } = {}): Promise<number> {
  const out = io.out ?? process.stdout
  const err = io.err ?? process.stderr
  const [command, ...rest] = argv
  let name = 'dsh-bash'
  try {
    if (command === undefined) throw new UsageError('missing command (mcp or repl)')
    if (command === '-h' || command === '--help') return write(out, MAIN_HELP), 0
    if (command === '-v' || command === '--version') return write(out, version()), 0
    if (command === 'help') {
      const topic = rest[0]
      if (topic === undefined) return write(out, MAIN_HELP), 0
      if (!HELP[topic]) throw new UsageError(`help: unknown command ${JSON.stringify(topic)}`)
      return write(out, HELP[topic]), 0
    }
    if (command.startsWith('-')) throw new UsageError(`unknown flag ${command}`)
    if (!HELP[command]) throw new UsageError(`unknown command ${JSON.stringify(command)} (expected mcp or repl)`)
    name = `dsh-bash ${command}`
    logToStderr()
    if (command === 'mcp') {
      const options = parseMcpArgs(rest)
      if (options === 'help') return write(out, MCP_HELP), 0
      return await runMcp(options)
    }
    const options = parseReplArgs(rest)
    if (options === 'help') return write(out, REPL_HELP), 0
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
