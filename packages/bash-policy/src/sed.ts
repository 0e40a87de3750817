/** What a sed script does beyond printing, as far as a reading of its commands tells. */
export interface SedEffects {
  /** The `e` command or the `e` flag of `s`: runs a shell command. */
  runs: boolean
  /** Files written by `w`/`W` and the `w` flag of `s`. */
  writes: string[]
  /** Set when the script could not be read; the caller treats it as unsafe. */
  unclear?: string
}

const SIMPLE = new Set(['=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F', '{', '}'])

/** Reads a (GNU) sed script command by command: addresses, `s` and `y` with any delimiter, etc. */
export function sedEffects(script: string): SedEffects {
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
