import { Logger } from 'cordis'

/**
 * Where our packages' diagnostics go. Every package logs through its plugin context
 * (`ctx.logger('dsh-bash-ssh').warn(…)`); cordis' logger (reggol) prints through its global targets,
 * and its default target prints with `console.log`, that is to stdout. A front end whose stdout
 * carries a protocol (MCP over stdio) or an answer (`dsh-bash agent`) moves it with `routeLogs`.
 */

/** cordis' default target, as it was when this module loaded: the one that prints to stdout. */
const DEFAULT_TARGET: Logger.Target | undefined = Logger.targets[0]

/**
 * Makes cordis' default log target print to `stream` (default stderr), colored only when that stream
 * is a terminal. Targets a host added itself are left alone; a host that removed the default one
 * has nothing moved. Process-wide (reggol's targets are global); idempotent.
 */
export function routeLogs(stream: NodeJS.WritableStream = process.stderr): void {
  if (!DEFAULT_TARGET) return
  DEFAULT_TARGET.colors = colorLevel(stream)
  DEFAULT_TARGET.print = (text: string) => void stream.write(`${text}\n`)
}

/** One line our packages logged: the logger's name (`dsh-bash-ssh`), its level, and the text. */
export interface LogLine {
  /** The logger's name: the package (`dsh-tools`, `dsh-bash`, …); never a plugin instance. */
  name: string
  /** `error`, `warn`, `info`, `success` or `debug`. */
  type: Logger.Type
  /** The formatted text, without the level, the name or colors. */
  content: string
}

/**
 * Records every line logged from now on (every level, debug included) until `stop()`: for tests and
 * for hosts that show diagnostics themselves. The other targets keep printing.
 */
export function recordLogs(): { lines: LogLine[]; stop(): void } {
  const lines: LogLine[] = []
  const target: Logger.Target = {
    colors: 0,
    levels: { base: Logger.DEBUG },
    record: (record) => {
      lines.push({ name: record.name, type: record.type, content: record.content })
    },
  }
  Logger.targets.push(target)
  return {
    lines,
    stop: () => {
      const at = Logger.targets.indexOf(target)
      if (at >= 0) Logger.targets.splice(at, 1)
    },
  }
}

/** reggol's color levels (0 none, 1: 16, 2: 256, 3: truecolor) from the stream's color depth. */
function colorLevel(stream: NodeJS.WritableStream): number {
  const tty = stream as NodeJS.WritableStream & { isTTY?: boolean; getColorDepth?: () => number }
  if (!tty.isTTY || typeof tty.getColorDepth !== 'function') return 0
  const depth = tty.getColorDepth()
  return depth >= 24 ? 3 : depth >= 8 ? 2 : depth >= 4 ? 1 : 0
}
