import { readFileSync } from 'node:fs'
import { type Instead, parseAgentArgs, parseMcpArgs, parseReplArgs } from './args.js'
import { didYouMean } from './flags.js'
import { isStartupError, isUsageError, UsageError } from './errors.js'
import { AGENT_HELP, MAIN_HELP, MCP_HELP, REPL_HELP } from './help.js'


/** A command: its help, and how it parses its flags and runs (its module is loaded only then). */
interface Command {
  help: string
  /** Parses `args` and runs the command; 'help' or 'version' when the flags asked for that instead. */
  run(args: string[]): Promise<number | Instead>
}

function command<O>(help: string, parse: (args: string[]) => O | Instead, load: () => Promise<(options: O) => Promise<number>>): Command {
  return {
    help,
    async run(args) {
      const options = parse(args)
      if (options === 'help' || options === 'version') return options as Instead
      // Loaded only now: help and usage errors stay fast. (composeApp sends cordis' logs to stderr.)
      const run = await load()
      return await run(options)
    },
  }
}

const COMMANDS: Record<string, Command> = {
  mcp: command(MCP_HELP, parseMcpArgs, async () => (await import('./mcp-command.js')).runMcp),
  repl: command(REPL_HELP, parseReplArgs, async () => (await import('./repl.js')).runRepl),
  agent: command(AGENT_HELP, (args) => parseAgentArgs(args, process.env), async () => (await import('./agent-command.js')).runAgent),
}

function lookup(name: string): Command | undefined {
  return Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined
}

/** The whole command line; resolves with the exit code. Never throws for usage or startup errors. */
export async function main(argv: string[], io: { out?: NodeJS.WritableStream; err?: NodeJS.WritableStream } = {}): Promise<number> {
  const out = io.out ?? process.stdout
  const err = io.err ?? process.stderr
  const [name, ...rest] = argv
  // The command a usage error points at ("Try dsh-bash <command> --help"), once it is known.
  let hint: string | undefined
  try {
    if (name === undefined) throw new UsageError('missing command (mcp, repl or agent)')
    if (name === '-h' || name === '--help') return write(out, MAIN_HELP), 0
    if (name === '-v' || name === '--version') return write(out, version()), 0
    if (name === 'help') {
      const topic = rest[0]
      if (topic === undefined) return write(out, MAIN_HELP), 0
      const help = lookup(topic)?.help
      if (!help) throw new UsageError(`help: unknown command ${JSON.stringify(topic)}${didYouMean(topic, Object.keys(COMMANDS))}`)
      return write(out, help), 0
    }
    if (name.startsWith('-')) throw new UsageError(`unknown flag ${name}${didYouMean(name, ['--help', '--version'])}`)
    const command = lookup(name)
    if (!command) throw new UsageError(`unknown command ${JSON.stringify(name)} (expected mcp, repl or agent)${didYouMean(name, Object.keys(COMMANDS))}`)
    hint = name
    const code = await command.run(rest)
    if (code === 'help') return write(out, command.help), 0
    if (code === 'version') return write(out, version()), 0
    return code
  } catch (error) {
    if (isUsageError(error)) {
      const topic = error.command ?? hint
      write(err, `dsh-bash: ${error.message}\nTry "dsh-bash ${topic ? `${topic} ` : ''}--help".`)
      return 2
    }
    if (isStartupError(error)) {
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
