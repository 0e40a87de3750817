import { JOINABLE_BYTES, joinableBytes } from './locale.js'

/**
 * A lexer for awk programs that is sure or says it is not. `awk *` may stand for mawk, gawk, the
 * one true awk or busybox, and they do not lex alike: mawk reads `length /x/` as a regex and gawk
 * as a division, gawk and mawk let a bracket hold `/` (`/[/]/`) and the others end the regex there,
 * after `if (c)` gawk expects a regex and mawk a division. A program is read only where all of them
 * agree; every such place is `unclear`. All of them parse the whole program before running any
 * of it, so a program one of them refuses runs nothing.
 */
export interface Token {
  kind: 'name' | 'number' | 'string' | 'regex' | 'newline' | 'op'
  /** A name, an operator, or the text between the quotes of a string (escapes kept). */
  text: string
  /** Parentheses open around the token (brackets and braces not counted). */
  parens: number
  /** Braces open around the token: > 0 inside an action or a function body. */
  braces: number
}

class Unclear extends Error {}

/** After these a `/` starts a regex in every awk. */
const REGEX_AFTER_KEYWORD = new Set(['print', 'printf', 'return', 'exit', 'else', 'do', 'in'])
/** Keywords (of some awk) after which the awks disagree, or which are never followed by `/`. */
const KEYWORDS = new Set([
  'BEGIN', 'END', 'BEGINFILE', 'ENDFILE', 'function', 'func', 'if', 'while', 'for', 'switch', 'case', 'default', 'break',
  'continue', 'next', 'nextfile', 'delete', 'getline',
])
/** Built-in functions: a bare name then `/` is a regex for mawk and a division for gawk. */
const BUILTINS = new Set([
  'length', 'substr', 'index', 'split', 'sub', 'gsub', 'match', 'sprintf', 'sin', 'cos', 'atan2', 'exp', 'log', 'sqrt', 'int',
  'rand', 'srand', 'tolower', 'toupper', 'system', 'close', 'fflush', 'gensub', 'strftime', 'systime', 'mktime', 'and', 'or',
  'xor', 'lshift', 'rshift', 'compl', 'asort', 'asorti', 'patsplit', 'isarray', 'typeof', 'strtonum', 'bindtextdomain',
  'dcgettext', 'dcngettext', 'mkbool',
])
const OPERATORS = [
  '**=', '&&', '||', '|&', '>>', '>=', '<=', '==', '!=', '!~', '++', '--', '+=', '-=', '*=', '%=', '^=', '**',
  '|', '>', '<', '!', '~', '+', '-', '*', '%', '^', '=', '?', ':', ',', ';', '{', '}', '(', ')', '[', ']', '$', '@',
]

/** Reads an awk program into tokens, or throws `Unclear` naming the first place it cannot be sure of. */
export function lexAwk(program: string): Token[] {
  if (joinableBytes(program)) throw new Unclear(JOINABLE_BYTES)
  const tokens: Token[] = []
  const parens: boolean[] = [] // for each open parenthesis: does it hold the condition of if/while/for/switch?
  let braces = 0
  let brackets = 0
  let controlClosed = false // the last token closed a condition: `if (c) /x/` is lexed differently
  let i = 0
  const push = (kind: Token['kind'], text: string) => tokens.push({ kind, text, parens: parens.length, braces })
  while (i < program.length) {
    const ch = program[i]
    const prev = tokens[tokens.length - 1]
    if (ch === ' ' || ch === '\t') {
      i++
      continue
    }
    if (ch === '\\') {
      if (program[i + 1] !== '\n') throw new Unclear('a backslash outside a string or regex is not a line continuation')
      i += 2
      continue
    }
    if (ch === '\n') {
      // Inside parentheses or brackets the awks differ on whether a line break is allowed.
      if (parens.length || brackets) throw new Unclear('a line break inside parentheses or brackets')
      push('newline', '\n')
      controlClosed = false
      i++
      continue
    }
    if (ch === '#') {
      const end = program.indexOf('\n', i)
      const comment = program.slice(i, end < 0 ? undefined : end)
      if (comment.endsWith('\\')) throw new Unclear('a comment ends in a backslash')
      i = end < 0 ? program.length : end
      continue
    }
    if (ch === '"') {
      let j = i + 1
      for (; program[j] !== '"'; j++) {
        if (j >= program.length || program[j] === '\n') throw new Unclear('a string is not terminated on its line')
        if (program[j] === '\\') {
          j++
          if (j >= program.length || program[j] === '\n') throw new Unclear('a string continues over a line break')
        }
      }
      push('string', program.slice(i + 1, j))
      controlClosed = false
      i = j + 1
      continue
    }
    if (ch === '/') {
      const context = slashContext(prev, controlClosed)
      if (context === 'unclear') throw new Unclear(`a "/" after ${prev ? JSON.stringify(prev.text) : 'nothing'} is a regex for some awks and a division for others`)
      if (context === 'regex') {
        const end = regexEnd(program, i + 1)
        push('regex', program.slice(i + 1, end))
        controlClosed = false
        i = end + 1
        continue
      }
    }
    if (/[0-9]/.test(ch) || (ch === '.' && /[0-9]/.test(program[i + 1] ?? ''))) {
      const match = /^[0-9.]+(?:[eE][+-]?[0-9]+)?[A-Za-z0-9_]*/.exec(program.slice(i))!
      push('number', match[0])
      controlClosed = false
      i += match[0].length
      continue
    }
    if (/[A-Za-z_]/.test(ch)) {
      const match = /^[A-Za-z_][A-Za-z0-9_]*/.exec(program.slice(i))!
      push('name', match[0])
      controlClosed = false
      i += match[0].length
      continue
    }
    const op = OPERATORS.find((candidate) => program.startsWith(candidate, i)) ?? (ch === '/' ? (program[i + 1] === '=' ? '/=' : '/') : undefined)
    if (!op) throw new Unclear(`the character ${JSON.stringify(ch)} is not awk`)
    controlClosed = false
    if (op === '(') parens.push(prev?.kind === 'name' && ['if', 'while', 'for', 'switch'].includes(prev.text))
    else if (op === ')') {
      if (!parens.length) throw new Unclear('a ")" closes nothing')
      controlClosed = parens.pop()!
    } else if (op === '[') brackets++
    else if (op === ']') brackets = Math.max(0, brackets - 1)
    else if (op === '{') braces++
    else if (op === '}') braces = Math.max(0, braces - 1)
    push('op', op)
    i += op.length
  }
  return tokens
}

function slashContext(prev: Token | undefined, controlClosed: boolean): 'regex' | 'division' | 'unclear' {
  if (!prev || prev.kind === 'newline') return 'regex'
  if (prev.kind === 'number' || prev.kind === 'string') return 'division'
  if (prev.kind === 'regex') return 'unclear'
  if (prev.kind === 'name') {
    if (REGEX_AFTER_KEYWORD.has(prev.text)) return 'regex'
    if (KEYWORDS.has(prev.text) || BUILTINS.has(prev.text)) return 'unclear'
    return 'division'
  }
  if (prev.text === ')') return controlClosed ? 'unclear' : 'division'
  if (prev.text === ']' || prev.text === '++' || prev.text === '--') return 'division'
  if (prev.text === '$' || prev.text === '@') return 'unclear'
  return 'regex'
}

/**
 * The index of the `/` that ends a regex literal starting at `start`. Every awk ends it at the
 * first `/` not escaped by a backslash, except that gawk and mawk skip a `/` inside a bracket
 * expression: so a bracket must visibly close before that `/` in every reading — no `/`, `\`,
 * `[` (but `[:class:]`) or leading `]` inside it.
 */
function regexEnd(program: string, start: number): number {
  for (let i = start; ; i++) {
    const ch = program[i]
    if (ch === undefined || ch === '\n') throw new Unclear('a regex is not terminated on its line')
    if (ch === '/') return i
    if (ch === '\\') {
      i++
      if (program[i] === undefined || program[i] === '\n') throw new Unclear('a regex continues over a line break')
    } else if (ch === '[') {
      i++
      if (program[i] === '^') i++
      if (program[i] === ']') throw new Unclear('a bracket expression in a regex starts with "]"')
      for (; program[i] !== ']'; i++) {
        const class_ = /^\[:[a-z]+:\]/.exec(program.slice(i))
        if (class_) i += class_[0].length - 1
        else if (program[i] === undefined || '/\\[\n'.includes(program[i])) throw new Unclear('a bracket expression in a regex holds "/", "\\" or "["')
      }
    }
  }
}

/** gawk opens network connections for these names (`/inet/tcp/0/host/port`), as files to read or write. */
const NETWORK_FILE = /inet/

/** What an awk program does beyond reading its input and printing, as reasons to ask. */
export function awkEffects(name: string, program: string): string[] {
  let tokens: Token[]
  try {
    tokens = lexAwk(program)
  } catch (error) {
    if (error instanceof Unclear) return [`${name} program could not be read with certainty (${error.message})`]
    throw error
  }
  const flags = new Set<string>()
  tokens.forEach((token, i) => {
    if (token.kind === 'name' && token.text === 'system') flags.add(`${name} system() runs a command`)
    else if (token.kind === 'name' && ['ARGV', 'ARGC', 'PROCINFO'].includes(token.text)) {
      flags.add(`${name} ${token.text} can name the files gawk opens or the functions it calls`)
    } else if (token.kind === 'op' && (token.text === '|' || token.text === '|&')) flags.add(`${name} pipes run commands`)
    else if (token.kind === 'op' && token.text === '@') flags.add(`${name} @-directives and indirect calls can run anything`)
    else if (token.kind === 'op' && (token.text === '>' || token.text === '>>') && token.parens === 0 && token.braces > 0) {
      // In an action, `>` outside parentheses is an output redirection whenever a print owns it.
      if (!standardStream(tokens, i + 1)) flags.add(`${name} print > writes to a file`)
    } else if (token.kind === 'name' && token.text === 'getline') {
      const read = tokens.slice(i + 1).findIndex((next) => next.kind === 'newline' || (next.kind === 'op' && [';', '{', '}', '<'].includes(next.text)))
      const at = read < 0 ? -1 : i + 1 + read
      if (at >= 0 && tokens[at].text === '<' && !literalFile(tokens, at + 1)) flags.add(`${name} getline < reads a file named at run time (gawk connects for /inet/… names)`)
    }
  })
  return [...flags]
}

/** A target that is exactly `"/dev/stdout"` or `"/dev/stderr"`, with nothing concatenated to it. */
function standardStream(tokens: readonly Token[], at: number): boolean {
  const target = tokens[at]
  return target?.kind === 'string' && ['/dev/stdout', '/dev/stderr'].includes(target.text) && endsExpression(tokens[at + 1])
}

/** A plain string literal naming a file, with nothing concatenated to it. */
function literalFile(tokens: readonly Token[], at: number): boolean {
  const target = tokens[at]
  return target?.kind === 'string' && !target.text.includes('\\') && !NETWORK_FILE.test(target.text) && (endsExpression(tokens[at + 1]) || tokens[at + 1]?.text === ')')
}

function endsExpression(token: Token | undefined): boolean {
  return !token || token.kind === 'newline' || (token.kind === 'op' && [';', '}'].includes(token.text))
}

/** Operands of awk that gawk would open as a network connection. */
export function networkOperand(text: string): boolean {
  return text.startsWith('/inet')
}
