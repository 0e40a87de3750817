import { JOINABLE_BYTES, joinableBytes } from './locale.js'

/** What a sed script does beyond printing, as far as a reading of its commands tells. */
export interface SedEffects {
  /** The `e` command or the `e` flag of `s`: runs a shell command. */
  runs: boolean
  /** Files written by `w`/`W` and the `w` flag of `s` (opened, and so truncated, when sed starts). */
  writes: string[]
  /** Set when the script could not be read with certainty; the caller treats it as unsafe. */
  unclear?: string
}

/** One script as sed compiles it: an `-e` value or the script operand. */
export interface SedScript {
  text: string
  /** `--sandbox` was given before this script was compiled: sed refuses `e`, `r`, `w` in it. */
  sandbox: boolean
}

const EOF = ''
const SPACE = /^[ \t\n\v\f\r]$/
const BLANK = /^[ \t]$/
const DIGIT = /^[0-9]$/
const END_OF_CMD = new Set(['=', 'd', 'D', 'F', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'z', 'x'])

class Unclear extends Error {}


/**
 * Reads (GNU) sed scripts the way sed 4.9 compiles them (`compile.c`: `compile_program`,
 * `match_slash`, `snarf_char_class`, `mark_subst_opts`, `read_text`, `read_label`,
 * `read_filename`), so that every `e` and `w` sed would see is seen here. It mirrors sed's
 * scanner, not its error checks: a script sed refuses runs nothing, and any place where this
 * reading could differ from sed's (a construct it does not know, a locale-dependent byte) is
 * `unclear`. Scripts given with several `-e` are compiled in order and share state, as in sed:
 * a text command ending in a backslash continues into the next script.
 */
export function sedEffects(scripts: string | readonly SedScript[]): SedEffects {
  const list = typeof scripts === 'string' ? [{ text: scripts, sandbox: false }] : scripts
  const effects: SedEffects = { runs: false, writes: [] }
  const reader = new SedReader(effects)
  try {
    for (const script of list) reader.compile(script)
  } catch (error) {
    if (!(error instanceof Unclear)) throw error
    effects.unclear = error.message
  }
  return effects
}

class SedReader {
  private s = ''
  private i = 0
  private sandbox = false
  /** An `a`, `i` or `c` text ended in a backslash: the next script starts inside it. */
  private pendingText = false

  constructor(private readonly effects: SedEffects) {}

  compile(script: SedScript): void {
    this.s = script.text
    this.i = 0
    this.sandbox = script.sandbox
    if (joinableBytes(script.text)) throw new Unclear(JOINABLE_BYTES)
    if (this.pendingText) this.readText('\n')
    for (;;) {
      let ch = this.next()
      while (ch === ';' || SPACE.test(ch)) ch = this.next()
      if (ch === EOF) return
      if (this.address(ch)) {
        ch = this.nonblank()
        if (ch === ',') {
          if (!this.address(this.nonblank())) throw new Unclear('an address range has no second address')
          ch = this.nonblank()
        }
      }
      if (ch === '!') ch = this.nonblank()
      this.command(ch)
    }
  }

  private command(ch: string): void {
    if (END_OF_CMD.has(ch) || ch === '}') return this.endOfCommand()
    switch (ch) {
      case '#':
        while (this.peek() !== EOF && this.peek() !== '\n') this.i++
        return
      case '{':
        return
      case 'v':
      case ':':
      case 'b':
      case 't':
      case 'T':
        this.label()
        return
      case 'e': {
        this.run()
        const lead = this.nonblank()
        if (lead === EOF || lead === '\n') return
        return this.textCommand(lead)
      }
      case 'a':
      case 'i':
      case 'c': {
        const lead = this.nonblank()
        if (lead === EOF) throw new Unclear(`a ${ch} command has no text`)
        return this.textCommand(lead)
      }
      case 'q':
      case 'Q':
      case 'l':
      case 'L':
        if (DIGIT.test(this.nonblankPeek())) while (DIGIT.test(this.peek())) this.i++
        return this.endOfCommand()
      case 'r':
      case 'R':
        this.filename()
        return
      case 'w':
      case 'W':
        this.write(this.filename())
        return
      case 's': {
        const slash = this.next()
        this.delimited(slash, true, 's')
        this.delimited(slash, false, 's')
        return this.substituteFlags()
      }
      case 'y': {
        const slash = this.next()
        this.delimited(slash, false, 'y')
        this.delimited(slash, false, 'y')
        return this.endOfCommand()
      }
      case EOF:
        throw new Unclear('an address has no command')
      default:
        throw new Unclear(`unknown sed command "${ch}"`)
    }
  }

  private run(): void {
    if (!this.sandbox) this.effects.runs = true
  }

  private write(file: string): void {
    if (!this.sandbox) this.effects.writes.push(file)
  }

  /** `compile_address`: true when an address was read, false (and nothing read) when `ch` starts none. */
  private address(ch: string): boolean {
    if (ch === '/' || ch === '\\') {
      const slash = ch === '\\' ? this.next() : ch
      this.delimited(slash, true, 'address')
      // GNU flags I and M, with blanks between; anything else is the command.
      while ('IM'.includes(this.nonblankPeek()) && this.nonblankPeek() !== EOF) this.nonblank()
      return true
    }
    if (DIGIT.test(ch)) {
      while (DIGIT.test(this.peek())) this.i++
      if (this.nonblankPeek() === '~') {
        this.nonblank()
        this.nonblankPeek()
        while (DIGIT.test(this.peek())) this.i++
      }
      return true
    }
    if (ch === '+' || ch === '~') {
      this.nonblankPeek()
      while (DIGIT.test(this.peek())) this.i++
      return true
    }
    return ch === '$'
  }

  /**
   * `match_slash`: a regex (brackets may hold the delimiter) or a replacement, up to the delimiter.
   * The delimiter is tested first, so `\` or `[` as a delimiter loses its own meaning.
   */
  private delimited(slash: string, regex: boolean, what: string): void {
    if (slash === EOF || slash === '\n') throw new Unclear(`an ${what} has no delimiter`)
    if (slash > '\x7f') throw new Unclear(`an ${what} has a non-ASCII delimiter`)
    for (;;) {
      const ch = this.next()
      if (ch === EOF || ch === '\n') throw new Unclear(`an ${what === 'address' ? 'address' : `${what} command`} is not terminated`)
      if (ch === slash) return
      if (ch === '\\') {
        if (this.next() === EOF) throw new Unclear(`an ${what === 'address' ? 'address' : `${what} command`} is not terminated`)
      } else if (ch === '[' && regex) {
        if (this.bracket() !== ']') throw new Unclear(`a bracket expression is not terminated`)
      }
    }
  }

  /** `snarf_char_class`: the rest of a bracket expression, with `[:…:]`, `[.….]`, `[=…=]`. */
  private bracket(): string {
    let ch = this.next()
    if (ch === '^') ch = this.next()
    if (ch === ']') ch = this.next()
    let state = 0
    let delim = ''
    for (;; ch = this.next()) {
      // In a multibyte locale sed skips a multibyte character without resetting its state; in
      // the C locale each byte resets it. Which one applies is not in the command line.
      if (ch > '\x7f') throw new Unclear('a bracket expression holds a non-ASCII character')
      if (ch === EOF || ch === '\n') return ch
      if (ch === '.' || ch === ':' || ch === '=') {
        if (state === 1) {
          delim = ch
          state = 2
          continue
        }
        if (state === 2 && ch === delim) {
          state = 3
          continue
        }
      } else if (ch === '[') {
        if (state === 0) state = 1
        continue
      } else if (ch === ']') {
        if (state === 0 || state === 1) return ch
        if (state === 3) state = 0
      }
      state &= ~1
    }
  }

  /** `mark_subst_opts`: the flags of `s`, blanks allowed between them. */
  private substituteFlags(): void {
    for (;;) {
      const ch = this.nonblank()
      if ('iImMpg'.includes(ch) && ch !== EOF) continue
      if (ch === 'e') {
        this.run()
        continue
      }
      if (ch === 'w') return this.write(this.filename())
      if (DIGIT.test(ch)) {
        while (DIGIT.test(this.peek())) this.i++
        continue
      }
      if (ch === '}' || ch === '#') {
        this.i--
        return
      }
      if (ch === EOF || ch === '\n' || ch === ';') return
      if (ch === '\r' && this.peek() === '\n') {
        this.i++
        return
      }
      throw new Unclear(`unknown flag "${ch}" of an s command`)
    }
  }

  /** `read_end_of_cmd`: only blanks, then `}`, `#`, `;`, a newline or the end. */
  private endOfCommand(): void {
    const ch = this.nonblank()
    if (ch === '}' || ch === '#') this.i--
    else if (ch !== EOF && ch !== '\n' && ch !== ';') throw new Unclear(`extra characters after a command ("${ch}")`)
  }

  /** `read_label`: after blanks, up to a blank, `;`, `}`, `#`, a newline or the end (which stay). */
  private label(): void {
    this.nonblankPeek()
    while (!['', '\n', ' ', '\t', ';', '}', '#'].includes(this.peek())) this.i++
  }

  /** `read_filename`: after blanks, the rest of the line. */
  private filename(): string {
    this.nonblankPeek()
    const end = this.s.indexOf('\n', this.i)
    const name = this.s.slice(this.i, end < 0 ? this.s.length : end)
    this.i = end < 0 ? this.s.length : end + 1
    if (!name) throw new Unclear('a file name is missing')
    return name
  }

  /** `read_text_to_slash`: `a\`+text, or GNU's one-line `a text`. */
  private textCommand(lead: string): void {
    if (lead === '\\') this.readText(this.next())
    else {
      this.i--
      this.readText('\n')
    }
  }

  /** `read_text`: to the first newline not escaped by a backslash; a backslash at the end continues in the next script. */
  private readText(lead: string): void {
    this.pendingText = true
    if (lead === EOF) return
    let ch = this.next()
    while (ch !== EOF && ch !== '\n') {
      if (ch === '\\') {
        ch = this.next()
        if (ch === EOF) return
      }
      ch = this.next()
    }
    this.pendingText = false
  }

  private next(): string {
    return this.i < this.s.length ? this.s[this.i++] : EOF
  }

  private peek(): string {
    return this.i < this.s.length ? this.s[this.i] : EOF
  }

  /** `in_nonblank`. */
  private nonblank(): string {
    let ch = this.next()
    while (BLANK.test(ch)) ch = this.next()
    return ch
  }

  /** Skips blanks and returns the next character without reading it. */
  private nonblankPeek(): string {
    while (BLANK.test(this.peek())) this.i++
    return this.peek()
  }
}
