import type { Word } from './unquote.js'

/**
 * less, more and man, read by allow lists. Each word that starts with `-` or `+` is read as
 * options, even one that could be the value of the option before it (an option's value is only
 * skipped when it does not look like an option): a reading that takes a value for an option where
 * the program sees an option would be the unsafe mistake, the other one only asks more often.
 * What these programs do at a keyboard (`!cmd`, `|`, `v`, `s file` in less) is not this reader's
 * concern: a non-interactive run that writes to a pipe only copies its input; the `+cmd` start
 * commands are keystrokes, so only moving to a line or searching for printable text is read.
 */
export interface PagerOptions {
  name: string
  /** Letters with no value. */
  short: string
  /** Letters whose value is attached or the next word. */
  shortArg: string
  /** Long names, written in full (the programs accept prefixes, but of their whole table). */
  long: readonly string[]
  longArg: readonly string[]
  /** A `+` word the program accepts as a start command, or undefined when `+` words are not read. */
  plus?: RegExp
  /** `-NUMBER` (more's lines per screen). */
  numeric?: boolean
  /** Reasons for the options the program documents as running or writing something. */
  known: Record<string, string>
}

export function pagerFlags(spec: PagerOptions, words: readonly Word[]): string[] {
  const flags: string[] = []
  const not = (written: string, name: string) =>
    flags.push(spec.known[name] ?? `${spec.name} option "${written}" is not read (only the options that change what is shown are)`)
  for (let i = 1; i < words.length; i++) {
    const word = words[i]
    if (!word.literal) continue // computed words are asked about by the caller
    const text = word.text
    if (text.startsWith('+')) {
      if (!spec.plus?.test(text)) not(text, '+')
      continue
    }
    if (!text.startsWith('-') || text === '-' || text === '--') continue
    if (text.startsWith('--')) {
      const eq = text.indexOf('=')
      const name = text.slice(2, eq < 0 ? undefined : eq)
      if (spec.longArg.includes(name)) {
        if (eq < 0 && words[i + 1]?.literal && !/^[-+]/.test(words[i + 1].text)) i++
      } else if (!spec.long.includes(name) || eq >= 0) not(text, name)
      continue
    }
    if (spec.numeric && /^-\d+$/.test(text)) continue
    // `-+X` resets option X to its default (less).
    const letters = text.startsWith('-+') ? text.slice(2) : text.slice(1)
    for (let j = 0; j < letters.length; j++) {
      const letter = letters[j]
      if (spec.shortArg.includes(letter)) {
        if (j === letters.length - 1 && words[i + 1]?.literal && !/^[-+]/.test(words[i + 1].text)) i++
        break
      }
      if (!spec.short.includes(letter)) {
        not(text, letter)
        break
      }
    }
  }
  return flags
}

/** Keystrokes that only move: a line number, the start or the end, or a search for printable text. */
const MOVE = /^\+\+?(\d*[gGpP%]?|\/[\x20-\x7e]*)$/

export const LESS: PagerOptions = {
  name: 'less',
  short: 'aABcCdeEfFgGiIJKLmMnNqQrRsSuUVwWX~',
  shortArg: 'bhjpPxyz#"',
  long: [
    'HILITE-SEARCH', 'HILITE-UNREAD', 'IGNORE-CASE', 'LINE-NUMBERS', 'LONG-PROMPT', 'QUIET', 'QUIT-AT-EOF', 'RAW-CONTROL-CHARS',
    'SEARCH-SKIP-SCREEN', 'SILENT', 'UNDERLINE-SPECIAL', 'auto-buffers', 'chop-long-lines', 'clear-screen', 'dumb', 'file-size',
    'follow-name', 'force', 'help', 'hilite-search', 'hilite-unread', 'ignore-case', 'incsearch', 'line-numbers', 'long-prompt',
    'mouse', 'no-histdups', 'no-init', 'no-keypad', 'no-lessopen', 'quiet', 'quit-at-eof', 'quit-if-one-screen', 'quit-on-intr',
    'raw-control-chars', 'search-skip-screen', 'silent', 'squeeze-blank-lines', 'status-column', 'tilde', 'underline-special',
    'use-backslash', 'use-color', 'version',
  ],
  longArg: ['buffers', 'jump-target', 'line-num-width', 'max-back-scroll', 'max-forw-scroll', 'pattern', 'prompt', 'quotes', 'shift', 'status-col-width', 'tabs', 'wheel-lines', 'window'],
  plus: MOVE,
  known: {
    '+': 'less +cmd runs start commands (only moving and searching are read)',
    o: 'less -o writes a log file', O: 'less -O writes a log file', 'log-file': 'less --log-file writes to a file', 'LOG-FILE': 'less --LOG-FILE writes to a file',
    k: 'less -k reads key bindings and environment settings (LESSOPEN) from a file', 'lesskey-file': 'less --lesskey-file reads key bindings and environment settings from a file',
    'lesskey-src': 'less --lesskey-src reads key bindings and environment settings from a file', 'lesskey-content': 'less --lesskey-content sets key bindings and environment settings',
    t: 'less -t runs the tag program named by LESSGLOBALTAGS', tag: 'less --tag runs the tag program named by LESSGLOBALTAGS',
    T: 'less -T reads a tags file', 'tag-file': 'less --tag-file reads a tags file',
  },
}

export const MORE: PagerOptions = {
  name: 'more',
  short: 'dflcpsuehV',
  shortArg: 'n',
  long: ['silent', 'logical', 'no-pause', 'print-over', 'clean-print', 'squeeze', 'plain', 'exit-on-eof', 'help', 'version'],
  longArg: ['lines'],
  plus: /^\+(\d+|\/[\x20-\x7e]*)$/,
  numeric: true,
  known: { '+': 'more +cmd is only read as a line number or a search' },
}

export const MAN: PagerOptions = {
  name: 'man',
  short: 'awWfkKldDiI7hV',
  shortArg: 'sSLmeE',
  long: [
    'all', 'where', 'path', 'location', 'where-cat', 'location-cat', 'whatis', 'apropos', 'global-apropos', 'local-file', 'debug',
    'default', 'ignore-case', 'match-case', 'regex', 'wildcard', 'names-only', 'no-subpages', 'no-hyphenation', 'nh',
    'no-justification', 'nj', 'ascii', 'help', 'usage', 'version',
  ],
  longArg: ['sections', 'locale', 'systems', 'extension', 'encoding'],
  known: {
    P: 'man -P runs a pager', pager: 'man --pager runs a command', H: 'man -H runs a browser', html: 'man --html runs a browser',
    C: 'man -C reads a configuration that names the programs it runs', 'config-file': 'man --config-file names the programs it runs',
    X: 'man -X runs gxditview', gxditview: 'man --gxditview runs gxditview', p: 'man -p chooses preprocessors', preprocessor: 'man --preprocessor chooses preprocessors',
    r: 'man -r sets the pager prompt', prompt: 'man --prompt sets the pager prompt', u: 'man -u updates the index', update: 'man --update updates the index',
    c: 'man -c writes cat pages', catman: 'man --catman writes cat pages', M: 'man -M reads pages and their configuration from another path', manpath: 'man --manpath reads pages from another path',
  },
}
