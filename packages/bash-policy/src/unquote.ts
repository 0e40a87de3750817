import type { SyntaxNode } from './parser.js'

/**
 * One shell word after quote removal and brace expansion.
 *
 * `literal: false` means the word holds an expansion (`$x`, `$(…)`, `` `…` ``, `$((…))`, `<(…)`)
 * whose value is only known at run time: `text` is then its source text, and it may turn into any
 * number of words. `glob` means unquoted `*`, `?`, `[` or an extglob, which bash may replace by
 * file names.
 */
export interface Word {
  text: string
  literal: boolean
  glob: boolean
  /** The word as written, for messages. */
  source: string
}

/** Thrown where the policy cannot be sure what bash would do; the caller turns it into `ask`. */
export class Uncertain extends Error {}

/** The most words one brace expansion may yield before we stop guessing. */
export const MAX_BRACE_WORDS = 256

const DYNAMIC = new Set(['simple_expansion', 'expansion', 'command_substitution', 'arithmetic_expansion', 'process_substitution'])

class Chars {
  chars: string[] = []
  quoted: boolean[] = []
  dynamic = false

  add(text: string, quoted: boolean): void {
    for (const ch of text) {
      this.chars.push(ch)
      this.quoted.push(quoted)
    }
  }
}

/** A dynamic word that stands for text only known at run time (`{}` of find, xargs input…). */
export function dynamicWord(source: string): Word {
  return { text: source, literal: false, glob: false, source }
}

export function literalWord(text: string): Word {
  return { text, literal: true, glob: false, source: text }
}

/**
 * Turns the adjacent nodes of one shell word into words, the way bash does before it runs a
 * command: quote removal, backslash escapes, ANSI-C strings, line continuations, brace expansion.
 */
export function wordsOf(nodes: readonly SyntaxNode[], src: string): Word[] {
  const source = src.slice(nodes[0].start, nodes[nodes.length - 1].end)
  const chars = new Chars()
  chars.add(escapedBlanksBefore(nodes[0].start, src), true)
  addSequence(nodes, src, chars)
  if (chars.dynamic) return [dynamicWord(source)]
  return braceExpand(chars.chars, chars.quoted).map(([text, quoted]) => ({
    text: text.join(''),
    literal: true,
    glob: hasGlob(text, quoted),
    source,
  }))
}

/** The grammar leaves escaped blanks at the start of a word (`\\ a` is " a") out of the word. */
function escapedBlanksBefore(start: number, src: string): string {
  let lead = ''
  let k = start
  while (k >= 2 && (src[k - 1] === ' ' || src[k - 1] === '\t') && src[k - 2] === '\\') {
    let run = 0
    while (k - 2 - run >= 0 && src[k - 2 - run] === '\\') run++
    if (run % 2 === 0) break
    lead = src[k - 1] + lead
    k -= 2
  }
  return lead
}

function addSequence(nodes: readonly SyntaxNode[], src: string, out: Chars): void {
  for (let i = 0; i < nodes.length; i++) {
    const node = nodes[i]
    // `$"…"` (a translated string) is `$` followed by a string: the `$` is not part of the text.
    if (!node.named && node.type === '$' && nodes[i + 1]?.type === 'string' && nodes[i + 1].start === node.end) continue
    addNode(node, src, out)
  }
}

function addNode(node: SyntaxNode, src: string, out: Chars): void {
  if (DYNAMIC.has(node.type)) {
    out.dynamic = true
    return
  }
  switch (node.type) {
    case 'raw_string':
      out.add(src.slice(node.start + 1, node.end - 1), true)
      return
    case 'ansi_c_string':
      out.add(decodeAnsiC(src.slice(node.start + 2, node.end - 1)), true)
      return
    case 'string':
      addDoubleQuoted(node, src, out)
      return
    case 'ERROR':
      out.dynamic = true
      return
  }
  if (node.children.length === 0) {
    addUnquoted(src.slice(node.start, node.end), out)
    return
  }
  // Concatenations and the like: the children, and any text between them as written.
  let pos = node.start
  const children = node.children
  for (let i = 0; i < children.length; i++) {
    const child = children[i]
    if (child.start > pos) addUnquoted(src.slice(pos, child.start), out)
    pos = child.end
    const next = children[i + 1]
    if (!child.named && child.type === '$' && next?.type === 'string' && next.start === child.end) continue
    addNode(child, src, out)
  }
  if (pos < node.end) addUnquoted(src.slice(pos, node.end), out)
}

/** Text outside quotes: `\x` is a quoted x, backslash-newline disappears. */
function addUnquoted(text: string, out: Chars): void {
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]
    if (ch === '\\') {
      if (i + 1 >= text.length) {
        out.add('\\', false)
        continue
      }
      const next = text[++i]
      if (next !== '\n') out.add(next, true)
      continue
    }
    // The grammar gives expansions and quotes their own nodes; if one shows up as plain text the
    // parse is not what bash sees, so the value is unknown.
    if (ch === '`' || ch === "'" || ch === '"' || (ch === '$' && /[A-Za-z_{(0-9@*#?$!-]/.test(text[i + 1] ?? ''))) {
      out.dynamic = true
      return
    }
    out.add(ch, false)
  }
}

function addDoubleQuoted(node: SyntaxNode, src: string, out: Chars): void {
  const inner = node.children.filter((child) => !(child.type === '"' && !child.named))
  let pos = node.start + 1
  const end = node.end - 1
  for (const child of inner) {
    if (child.start > pos) addDoubleQuotedText(src.slice(pos, child.start), out)
    if (child.type === 'string_content') addDoubleQuotedText(src.slice(child.start, child.end), out)
    else if (DYNAMIC.has(child.type)) out.dynamic = true
    else if (child.named) out.dynamic = true
    else addDoubleQuotedText(src.slice(child.start, child.end), out)
    pos = Math.max(pos, child.end)
  }
  if (pos < end) addDoubleQuotedText(src.slice(pos, end), out)
}

/** Inside double quotes a backslash only escapes `$`, `` ` ``, `"`, `\` and newline. */
function addDoubleQuotedText(text: string, out: Chars): void {
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]
    if (ch === '\\' && i + 1 < text.length) {
      const next = text[i + 1]
      if (next === '\n') {
        i++
        continue
      }
      if (next === '$' || next === '`' || next === '"' || next === '\\') {
        out.add(next, true)
        i++
        continue
      }
    }
    if (ch === '`' || (ch === '$' && /[A-Za-z_{(0-9@*#?$!-]/.test(text[i + 1] ?? ''))) {
      out.dynamic = true
      return
    }
    out.add(ch, true)
  }
}

const SIMPLE_ESCAPES: Record<string, string> = {
  a: '\x07', b: '\b', e: '\x1b', E: '\x1b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v',
  '\\': '\\', "'": "'", '"': '"', '?': '?',
}

/** The body of `$'…'`, decoded as bash does. */
export function decodeAnsiC(body: string): string {
  let out = ''
  for (let i = 0; i < body.length; i++) {
    const ch = body[i]
    if (ch !== '\\' || i + 1 >= body.length) {
      out += ch
      continue
    }
    const next = body[++i]
    if (next in SIMPLE_ESCAPES) {
      out += SIMPLE_ESCAPES[next]
    } else if (next >= '0' && next <= '7') {
      const digits = /^[0-7]{1,3}/.exec(body.slice(i))![0]
      out += String.fromCharCode(parseInt(digits, 8) & 0xff)
      i += digits.length - 1
    } else if (next === 'x' || next === 'u' || next === 'U') {
      const max = next === 'x' ? 2 : next === 'u' ? 4 : 8
      const digits = new RegExp(`^[0-9a-fA-F]{1,${max}}`).exec(body.slice(i + 1))?.[0]
      if (!digits) {
        out += '\\' + next
        continue
      }
      const code = parseInt(digits, 16)
      out += code <= 0x10ffff ? String.fromCodePoint(code) : ''
      i += digits.length
    } else if (next === 'c' && i + 1 < body.length) {
      out += String.fromCharCode(body.charCodeAt(++i) & 0x1f)
    } else {
      out += '\\' + next
    }
  }
  return out
}

function hasGlob(chars: readonly string[], quoted: readonly boolean[]): boolean {
  for (let i = 0; i < chars.length; i++) {
    if (quoted[i]) continue
    const ch = chars[i]
    if (ch === '*' || ch === '?') return true
    // A bracket is only a pattern with an unquoted `]` after it (`[` alone is the test command).
    if (ch === '[' && chars.some((other, j) => j > i + 1 && other === ']' && !quoted[j])) return true
    if ((ch === '@' || ch === '!' || ch === '+') && chars[i + 1] === '(' && !quoted[i + 1]) return true
  }
  return false
}

type Expansion = [string[], boolean[]]

/** Bash brace expansion (`a{b,c}d`, `{1..3}`, `{a..e..2}`) on unquoted braces. */
export function braceExpand(chars: string[], quoted: boolean[]): Expansion[] {
  const out: Expansion[] = []
  expandInto(chars, quoted, out)
  return out
}

function expandInto(chars: string[], quoted: boolean[], out: Expansion[]): void {
  for (let open = 0; open < chars.length; open++) {
    if (chars[open] !== '{' || quoted[open]) continue
    let depth = 0
    let close = -1
    const commas: number[] = []
    for (let i = open; i < chars.length; i++) {
      if (quoted[i]) continue
      if (chars[i] === '{') depth++
      else if (chars[i] === '}' && --depth === 0) {
        close = i
        break
      } else if (chars[i] === ',' && depth === 1) commas.push(i)
    }
    if (close < 0) break
    const pre = chars.slice(0, open)
    const preQ = quoted.slice(0, open)
    const post = chars.slice(close + 1)
    const postQ = quoted.slice(close + 1)
    let alternatives: Expansion[] | undefined
    if (commas.length > 0) {
      alternatives = []
      let from = open + 1
      for (const at of [...commas, close]) {
        alternatives.push([chars.slice(from, at), quoted.slice(from, at)])
        from = at + 1
      }
    } else {
      const body = chars.slice(open + 1, close)
      if (!quoted.slice(open + 1, close).some(Boolean)) alternatives = sequence(body.join(''))
    }
    if (!alternatives) continue
    for (const [alt, altQ] of alternatives) {
      const tails: Expansion[] = []
      expandInto([...alt, ...post], [...altQ, ...postQ], tails)
      for (const [tail, tailQ] of tails) {
        out.push([[...pre, ...tail], [...preQ, ...tailQ]])
        if (out.length > MAX_BRACE_WORDS) throw new Uncertain(`brace expansion yields more than ${MAX_BRACE_WORDS} words`)
      }
    }
    return
  }
  out.push([chars, quoted])
}

function sequence(body: string): Expansion[] | undefined {
  const numeric = /^(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?$/.exec(body)
  const letters = /^([A-Za-z])\.\.([A-Za-z])(?:\.\.(-?\d+))?$/.exec(body)
  const match = numeric ?? letters
  if (!match) return undefined
  const step = Math.abs(Number(match[3] ?? 1)) || 1
  const from = numeric ? Number(match[1]) : match[1].charCodeAt(0)
  const to = numeric ? Number(match[2]) : match[2].charCodeAt(0)
  const count = Math.floor(Math.abs(to - from) / step) + 1
  if (count > MAX_BRACE_WORDS) throw new Uncertain(`brace expansion yields more than ${MAX_BRACE_WORDS} words`)
  // Bash pads every number to the widest end when either end is written with a leading zero.
  const width = numeric && (/^-?0\d/.test(match[1]) || /^-?0\d/.test(match[2])) ? Math.max(match[1].length, match[2].length) : 0
  const items: Expansion[] = []
  for (let i = 0; i < count; i++) {
    const value = from + (to >= from ? i : -i) * step
    let text = numeric ? String(value) : String.fromCharCode(value)
    if (width && text.length < width) text = value < 0 ? '-' + String(-value).padStart(width - 1, '0') : text.padStart(width, '0')
    const chars = [...text]
    items.push([chars, chars.map(() => true)])
  }
  return items
}
