/**
 * The program readers as they were before issue 25 (sed, awk, tar, less), kept verbatim as the
 * generator's control: the program generator must find lines these readers let through that do
 * harm, or it could not find the next such mistake either. Test code only; never used to decide.
 */
import { hasOption, optionValues, scanOptions } from '../../src/options.js'
/** What a sed script does beyond printing, as far as a reading of its commands tells. */
interface SedEffects {
  /** The `e` command or the `e` flag of `s`: runs a shell command. */
  runs: boolean
  /** Files written by `w`/`W` and the `w` flag of `s`. */
  writes: string[]
  /** Set when the script could not be read; the caller treats it as unsafe. */
  unclear?: string
}

const SIMPLE = new Set(['=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F', '{', '}'])

/** Reads a (GNU) sed script command by command: addresses, `s` and `y` with any delimiter, etc. */
export function oldSedEffects(script: string): SedEffects {
  const effects: SedEffects = { runs: false, writes: [] }
  const s = script
  let i = 0

  const fail = (why: string): SedEffects => ({ ...effects, unclear: why })
  const skipBlanks = () => {
    while (i < s.length && (s[i] === ' ' || s[i] === '\t')) i++
  }
  const restOfLine = () => {
    const end = s.indexOf('\n', i)
    const text = s.slice(i, end < 0 ? s.length : end)
    i = end < 0 ? s.length : end
    return text
  }
  const untilSeparator = () => {
    while (i < s.length && s[i] !== ';' && s[i] !== '\n' && s[i] !== '}') i++
  }
  // A regex or replacement up to the unescaped delimiter; brackets may hold the delimiter.
  const delimited = (delimiter: string, regex: boolean): boolean => {
    while (i < s.length && s[i] !== delimiter) {
      if (s[i] === '\\') i++
      else if (regex && s[i] === '[') {
        let j = i + 1
        if (s[j] === '^') j++
        if (s[j] === ']') j++
        while (j < s.length && s[j] !== ']') j++
        if (j >= s.length) return false
        i = j
      }
      i++
    }
    if (i >= s.length) return false
    i++
    return true
  }
  const address = (): boolean => {
    const ch = s[i]
    if (/[0-9]/.test(ch)) {
      while (/[0-9~]/.test(s[i] ?? '')) i++
    } else if (ch === '$') {
      i++
    } else if (ch === '+' || ch === '~') {
      i++
      while (/[0-9]/.test(s[i] ?? '')) i++
    } else if (ch === '/' || ch === '\\') {
      let delimiter = '/'
      if (ch === '\\') {
        delimiter = s[i + 1]
        i++
      }
      i++
      if (!delimiter || !delimited(delimiter, true)) return false
      while (s[i] === 'I' || s[i] === 'M') i++
    }
    return true
  }

  while (i < s.length) {
    while (i < s.length && /[\s;]/.test(s[i])) i++
    if (i >= s.length) break
    if (s[i] === '#') {
      restOfLine()
      continue
    }
    if (!address()) return fail('an address is not terminated')
    skipBlanks()
    if (s[i] === ',') {
      i++
      skipBlanks()
      if (!address()) return fail('an address is not terminated')
      skipBlanks()
    }
    while (s[i] === '!' || s[i] === ' ') i++
    const command = s[i++]
    if (command === undefined) return fail('an address has no command')
    if (SIMPLE.has(command)) continue
    switch (command) {
      case 'l':
      case 'L':
      case 'q':
      case 'Q':
        skipBlanks()
        while (/[0-9]/.test(s[i] ?? '')) i++
        break
      case 'b':
      case 't':
      case 'T':
      case ':':
      case 'v':
        untilSeparator()
        break
      case 'r':
      case 'R':
        restOfLine()
        break
      case 'w':
      case 'W':
        skipBlanks()
        effects.writes.push(restOfLine())
        break
      case 'e':
        effects.runs = true
        restOfLine()
        break
      case 'a':
      case 'i':
      case 'c':
        // Text to the end of the line; a trailing backslash continues it.
        for (;;) {
          const line = restOfLine()
          if (!/(^|[^\\])(\\\\)*\\$/.test(line) || i >= s.length) break
          i++
        }
        break
      case 's': {
        const delimiter = s[i++]
        if (!delimiter || delimiter === '\n' || delimiter === '\\') return fail('an s command has no delimiter')
        if (!delimited(delimiter, true) || !delimited(delimiter, false)) return fail('an s command is not terminated')
        for (;;) {
          const flag = s[i]
          if (flag === 'e') effects.runs = true
          if (flag === 'w') {
            i++
            skipBlanks()
            effects.writes.push(restOfLine())
            break
          }
          if (flag === undefined || !/[gpiImMe0-9]/.test(flag)) break
          i++
        }
        break
      }
      case 'y': {
        const delimiter = s[i++]
        if (!delimiter || !delimited(delimiter, false) || !delimited(delimiter, false)) return fail('a y command is not terminated')
        break
      }
      default:
        return fail(`unknown sed command "${command}"`)
    }
  }
  return effects
}

/** system(), pipes, print redirections and gawk's @-directives, outside string and regex literals. */
export function oldAwkEffects(name: string, program: string): string[] {
  const strings: string[] = []
  let code = ''
  for (let i = 0; i < program.length; i++) {
    const ch = program[i]
    const before = code.trimEnd().slice(-1)
    if (ch === '"' || (ch === '/' && !/[\w)\]$."]/.test(before))) {
      let j = i + 1
      while (j < program.length && program[j] !== ch) j += program[j] === '\\' ? 2 : 1
      if (ch === '"') {
        strings.push(program.slice(i + 1, j))
        code += `"${strings.length - 1}"`
      } else {
        code += '/re/'
      }
      i = j
      continue
    }
    code += ch
  }
  const flags: string[] = []
  if (/\bsystem\s*\(/.test(code)) flags.push(`${name} system() runs a command`)
  if (/\|/.test(code.replace(/\|\|/g, ''))) flags.push(`${name} pipes run commands`)
  if (/@\s*[A-Za-z_]/.test(code)) flags.push(`${name} @-directives and indirect calls can run anything`)
  for (const match of code.matchAll(/\bprintf?\b([^;}\n]*)/g)) {
    let depth = 0
    const tail = match[1]
    for (let i = 0; i < tail.length; i++) {
      if (tail[i] === '(') depth++
      else if (tail[i] === ')') depth--
      else if (tail[i] === '>' && depth <= 0) {
        const target = /^>?\s*"(\d+)"/.exec(tail.slice(i + 1))
        if (!target || !['/dev/stdout', '/dev/stderr'].includes(strings[Number(target[1])])) flags.push(`${name} print > writes to a file`)
        break
      }
    }
  }
  return flags
}

/** The old tar check: a few executing options, no modes (`tar -cf FILE x` passed). */
export function oldTarFlags(argv: readonly string[]): string[] {
  const long = ['to-command', 'checkpoint-action', 'use-compress-program', 'info-script', 'new-volume-script', 'rmt-command', 'rsh-command']
  return argv.slice(1).some((word) => (!word.startsWith('--') && /^-[a-zA-Z]*[IF]/.test(word)) || (word.length >= 4 && word.startsWith('--') && long.some((name) => name.startsWith(word.slice(2).split('=')[0]))))
    ? ['tar runs a command']
    : []
}

/** The old less check: `+…!`/`+…|` and -o/-O, --log-file/--LOG-FILE. */
export function oldLessFlags(argv: readonly string[]): string[] {
  const long = ['log-file', 'LOG-FILE']
  return argv.slice(1).some((word) => (!word.startsWith('--') && /^(\+.*[!|]|-[a-zA-Z]*[oO])/.test(word)) || (word.length >= 4 && word.startsWith('--') && long.some((name) => name.startsWith(word.slice(2).split('=')[0]))))
    ? ['less runs or writes']
    : []
}

/** The old sed inspector around the old script reader: `--sandbox` anywhere turned every check off. */
export function oldSedFlags(argv: readonly string[]): string[] {
  const words = argv.map((text) => ({ text, literal: true, glob: false, source: text }))
  const scan = scanOptions(words, 1, {
    short: 'nErsuzb', shortArg: 'efl', shortOptional: 'i',
    long: ['quiet', 'silent', 'regexp-extended', 'separate', 'unbuffered', 'null-data', 'zero-terminated', 'posix', 'debug', 'sandbox', 'follow-symlinks', 'binary', 'help', 'version'],
    longArg: ['expression', 'file', 'line-length'], longOptional: ['in-place'],
  })
  const flags: string[] = []
  if (scan.unknown || hasOption(scan, 'i', 'in-place', 'f', 'file')) flags.push('sed option')
  if (hasOption(scan, 'sandbox')) return flags
  const expressions = optionValues(scan, 'e', 'expression')
  for (const script of expressions.length ? expressions : scan.operands.slice(0, 1)) {
    const effects = oldSedEffects(script.text)
    if (effects.unclear || effects.runs || effects.writes.some((file) => !['/dev/stdout', '/dev/stderr'].includes(file))) flags.push('sed script')
  }
  return flags
}
