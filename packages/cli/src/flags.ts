/**
 * The command-line layer over `node:util` `parseArgs`: its errors reworded to name the flag, a
 * repeated single-valued flag refused, negative numbers taken as values, and "did you mean" for a
 * misspelt flag or value.
 *
 * Why not an argument library (commander, yargs, citty): each would replace these ~100 lines with
 * a dependency that still needs the same wording layer (our messages are part of the tests and the
 * README), would load at every start (`mcp` answers `initialize` before anything heavy loads), and
 * none refuses a repeated flag by default. parseArgs' `tokens` give exactly what the checks need.
 */
import { statSync } from 'node:fs'
import { resolve } from 'node:path'
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { UsageError } from './errors.js'

export type FlagSpec = ParseArgsConfig['options']

/** What parseArgs gives for `options` (values typed per flag, positionals, tokens). */
export type Parsed<S extends NonNullable<FlagSpec>> = ReturnType<typeof parseArgs<{ args: string[]; options: S; strict: true; allowPositionals: boolean; tokens: true }>>

/**
 * Parses `args`; throws a UsageError for `command` naming the flag: unknown (with the closest known
 * one), a value missing or given to a boolean, a single-valued flag given twice.
 */
export function parseCommandLine<S extends NonNullable<FlagSpec>>(command: string, args: string[], options: S, allowPositionals: boolean): Parsed<S> {
  // `--yield-after -1`: parseArgs takes `-1` for a flag and says only "expected a value". A
  // negative number after a flag that takes one is its value; the flag's own check then names it.
  const joined: string[] = []
  for (const arg of args) {
    const last = joined.at(-1)
    if (last?.startsWith('--') && !last.includes('=') && /^-\d/.test(arg) && options[last.slice(2)]?.type === 'string') {
      joined[joined.length - 1] = `${last}=${arg}`
    } else {
      joined.push(arg)
    }
  }
  let parsed
  try {
    parsed = parseArgs({ args: joined, options, strict: true, allowPositionals, tokens: true })
  } catch (error) {
    throw new UsageError(flagError(error, options), command)
  }
  const seen = new Set<string>()
  for (const token of parsed.tokens) {
    if (token.kind !== 'option' || options[token.name]?.multiple || options[token.name]?.type === 'boolean') continue
    if (seen.has(token.name)) throw new UsageError(`--${token.name}: given twice (it takes one value; the command line must say which)`, command)
    seen.add(token.name)
  }
  return parsed
}

function flagError(error: unknown, options: NonNullable<FlagSpec>): string {
  const message = error instanceof Error ? error.message : String(error)
  const code = (error as { code?: string }).code
  // "Option '-h, --help' …" names both forms: keep the long one.
  const flag = /'(?:-\w, )?(--?[^' ,=]+)/.exec(message)?.[1]
  switch (code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION': {
      const known = Object.keys(options).map((name) => `--${name}`)
      const guess = flag?.startsWith('--') ? closest(flag, known) : undefined
      return `unknown flag ${flag ?? message}${guess ? ` (did you mean ${guess}?)` : ''}`
    }
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `unexpected argument ${JSON.stringify(/'([^']*)'/.exec(message)?.[1] ?? message)}`
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      // One code for two mistakes: the option's declared type says which (never the message's wording).
      const name = flag?.replace(/^--?/, '') ?? ''
      const declared = Object.hasOwn(options, name) ? options[name] : Object.values(options).find((o) => o.short === name)
      return declared?.type === 'boolean' ? `${flag}: takes no value` : `${flag}: expected a value`
    }
    default:
      return message
  }
}

/** `value` with a suggestion when one of `choices` is close: ` (did you mean local?)`, else ''. */
export function didYouMean(value: string, choices: readonly string[]): string {
  const guess = closest(value, choices)
  return guess ? ` (did you mean ${guess}?)` : ''
}

/** The choice nearest to `value` by edit distance, if near enough to be a slip (≤ 1/3 of its length, at most 3). */
export function closest(value: string, choices: readonly string[]): string | undefined {
  let best: { choice: string; distance: number } | undefined
  for (const choice of choices) {
    const distance = editDistance(value.toLowerCase(), choice.toLowerCase())
    if (!best || distance < best.distance) best = { choice, distance }
  }
  if (!best) return undefined
  const limit = Math.min(3, Math.max(1, Math.floor(best.choice.replace(/^--/, '').length / 3)))
  return best.distance <= limit ? best.choice : undefined
}

/** Levenshtein distance, with a swap of two neighbours counting as one edit. */
function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)])
  for (let j = 1; j <= b.length; j++) rows[0][j] = j
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      rows[i][j] = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) rows[i][j] = Math.min(rows[i][j], rows[i - 2][j - 2] + 1)
    }
  }
  return rows[a.length][b.length]
}

/**
 * A flag naming a file: its absolute path; refused when it is a directory, and when nothing is
 * there unless `mayBeMissing` (a file its plugin reads and reports on at start). A pipe such as
 * `<(…)` passes. `what` words the file in the messages.
 */
export function fileFlag(flag: string, value: string, what = 'file', options: { mayBeMissing?: boolean } = {}): string {
  const path = resolve(value)
  let stat
  try {
    stat = statSync(path)
  } catch {
    if (options.mayBeMissing) return path
    throw new UsageError(`${flag}: no such ${what} ${JSON.stringify(value)}`)
  }
  if (stat.isDirectory()) throw new UsageError(`${flag}: ${JSON.stringify(value)} is a directory, expected a ${what}`)
  return path
}
