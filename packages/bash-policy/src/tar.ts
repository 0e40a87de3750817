import { resolveLong, scanOptions, type ScannedOptions } from './options.js'
import type { Word } from './unquote.js'

/**
 * GNU tar, read by an allow list: only listing (`-t`) and extracting to standard output
 * (`-x -O`) with options that change what is read or how it is printed. Everything else — the
 * writing modes, extracting to files, options that run programs or write side files, tape and
 * multi-volume options, an abbreviated long option — asks, named where tar's own table names it.
 */

/** Options with no argument: modes t/x, and modifiers that only change what is read or printed. */
const SHORT = 'txOvzjJZaiBR'
/** Options whose argument follows, attached or in the next word. */
const SHORT_ARG = 'fCbXKHN'
const LONG = [
  'list', 'extract', 'get', 'to-stdout', 'verbose', 'gzip', 'gunzip', 'ungzip', 'bzip2', 'xz', 'lzip', 'lzma', 'lzop', 'zstd',
  'compress', 'uncompress', 'auto-compress', 'ignore-zeros', 'read-full-records', 'block-number', 'full-time', 'utc',
  'numeric-owner', 'show-transformed-names', 'show-stored-names', 'wildcards', 'no-wildcards', 'wildcards-match-slash',
  'no-wildcards-match-slash', 'anchored', 'no-anchored', 'ignore-case', 'no-ignore-case', 'null', 'no-null', 'unquote',
  'no-unquote', 'verbatim-files-from', 'no-verbatim-files-from', 'recursion', 'no-recursion', 'force-local', 'exclude-vcs',
  'exclude-backups', 'exclude-caches', 'seek', 'no-seek', 'restrict', 'help', 'usage', 'version', 'show-defaults',
]
const LONG_ARG = [
  'file', 'directory', 'blocking-factor', 'record-size', 'exclude', 'exclude-from', 'strip-components', 'transform', 'xform',
  'quoting-style', 'quote-chars', 'no-quote-chars', 'format', 'warning', 'starting-file', 'newer', 'after-date', 'newer-mtime',
]
const LONG_OPTIONAL = ['totals', 'occurrence']

/** What tar's own options do, for the reason given when one is used. */
const KNOWN: Record<string, string> = {
  c: 'tar -c creates an archive', create: 'tar -c creates an archive',
  r: 'tar -r appends to an archive', append: 'tar -r appends to an archive',
  u: 'tar -u updates an archive', update: 'tar -u updates an archive',
  A: 'tar -A appends archives to an archive', catenate: 'tar -A appends archives to an archive', concatenate: 'tar -A appends archives to an archive',
  delete: 'tar --delete rewrites an archive',
  'to-command': 'tar --to-command runs a command', 'checkpoint-action': 'tar --checkpoint-action can run a command',
  I: 'tar -I runs a compression program', 'use-compress-program': 'tar --use-compress-program runs a command',
  F: 'tar -F runs a script', 'info-script': 'tar --info-script runs a command', 'new-volume-script': 'tar --new-volume-script runs a command',
  'rmt-command': 'tar --rmt-command runs a command', 'rsh-command': 'tar --rsh-command runs a command',
  g: 'tar -g writes a snapshot file', 'listed-incremental': 'tar --listed-incremental writes a snapshot file',
  'index-file': 'tar --index-file writes to a file', 'volno-file': 'tar --volno-file writes to a file',
  T: 'tar -T reads names and options from a file', 'files-from': 'tar -T reads names and options from a file',
}

/** Why a tar command line may do more than list an archive or print its members, or nothing. */
export function tarFlags(words: readonly Word[]): string[] {
  const flags = new Set<string>()
  for (const posix of [false, true]) {
    const scan = scanOptions(expandOldStyle(words), 1, { short: SHORT, shortArg: SHORT_ARG, long: LONG, longArg: LONG_ARG, longOptional: LONG_OPTIONAL, posix })
    for (const flag of readScan(scan)) flags.add(flag)
  }
  return [...flags]
}

function readScan(scan: ScannedOptions): string[] {
  const flags: string[] = []
  if (scan.unknown) flags.push(explain(scan.unknown))
  let extract = false
  let toStdout = false
  let forceLocal = false
  const archives: Word[] = []
  for (const option of scan.options) {
    // getopt resolves `--to` against tar's whole table, which holds more than this one: only full
    // names are read.
    if (option.written.startsWith('--') && option.written.slice(2).split('=')[0] !== option.name) {
      flags.push(`tar option "${option.written}" is abbreviated (only full names are read)`)
    }
    if (option.name === 'x' || option.name === 'extract' || option.name === 'get') extract = true
    else if (option.name === 'O' || option.name === 'to-stdout') toStdout = true
    else if (option.name === 'force-local') forceLocal = true
    else if ((option.name === 'f' || option.name === 'file') && option.value) archives.push(option.value)
  }
  if (extract && !toStdout) flags.push('tar -x extracts files (only -x -O, to standard output, is read)')
  for (const archive of archives) {
    // `host:file` (no `/` before the colon) is a remote archive: tar runs rsh or ssh to reach it.
    if (!forceLocal && /^[^/]+:/.test(archive.text)) flags.push(`tar archive ${archive.source} is remote: tar runs a remote shell`)
  }
  return flags
}

function explain(written: string): string {
  const name = written.startsWith('--') ? written.slice(2).split('=')[0] : written.slice(1)
  const long = written.startsWith('--') ? resolveLong(name, Object.keys(KNOWN).filter((key) => key.length > 1)) : undefined
  return KNOWN[name] ?? (long ? `${KNOWN[long]} (written "${written}")` : undefined) ?? `tar option "${written}" is not read (only listing with -t and extracting to standard output with -x -O are)`
}

/**
 * Old-style options: a first word without a dash is a bundle of letters (`tar cf FILE x`, `tar
 * tvf a.tar`); each letter that takes an argument takes the next word, in order.
 */
function expandOldStyle(words: readonly Word[]): Word[] {
  const first = words[1]
  if (!first || !first.literal || first.glob || first.text.startsWith('-') || !first.text) return [...words]
  const expanded: Word[] = [words[0]]
  let next = 2
  for (const letter of first.text) {
    const option = { ...first, text: `-${letter}`, source: `-${letter}` }
    expanded.push(option)
    // Letters tar takes an argument for, allowed here or not: b C f F g H I K L N T V X.
    if ('bCfFgHIKLNTVX'.includes(letter) && next < words.length) expanded.push(words[next++])
  }
  return [...expanded, ...words.slice(next)]
}
