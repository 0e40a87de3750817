import type { SyntaxNode } from './parser.js'
import type { Word } from './unquote.js'

/**
 * The safe subset of bash: the only lines the policy may `allow`. Everything outside it is at
 * most `ask`. The check is constructive: each node type the tree may hold is listed here with what
 * it may contain, and the text of every leaf is checked again by a regular expression of its own, so
 * that a place where tree-sitter-bash and bash disagree (`"$ b"` is a variable for the grammar,
 * text for bash; `[ a > b ]` is a comparison for the grammar, a redirection for bash) falls outside
 * instead of being trusted. The README has the same subset as a table.
 */

/** Why a line is outside the subset. */
export class Outside extends Error {}

const outside = (why: string): never => {
  throw new Outside(why)
}

/**
 * Variables a subset word may expand. Reading a variable runs nothing; what matters is where its
 * value goes, and the subset has no place where a value is evaluated (no arithmetic, subscripts,
 * `printf -v`, `test -v`, …). Bash's own variables are still left out: their values are the shell's
 * state (BASH_CMDS, BASH_ALIASES, BASH_ARGV…), positional and special parameters are not names, and
 * the dynamic ones (RANDOM, SECONDS, LINENO…) change on every read.
 */
const SPECIAL_VARIABLES = new Set([
  'BASH', 'BASHOPTS', 'BASHPID', 'COMP_CWORD', 'COMP_KEY', 'COMP_LINE', 'COMP_POINT', 'COMP_TYPE', 'COMP_WORDBREAKS',
  'COMP_WORDS', 'COMPREPLY', 'COPROC', 'DIRSTACK', 'EPOCHREALTIME', 'EPOCHSECONDS', 'EUID', 'FUNCNAME', 'GROUPS',
  'HISTCMD', 'HOSTTYPE', 'LINENO', 'MACHTYPE', 'MAPFILE', 'OLDPWD', 'OPTARG', 'OPTIND', 'OSTYPE', 'PIPESTATUS',
  'PPID', 'RANDOM', 'READLINE_ARGUMENT', 'READLINE_LINE', 'READLINE_MARK', 'READLINE_POINT', 'REPLY', 'SECONDS',
  'SHELLOPTS', 'SHLVL', 'SRANDOM', 'UID', '_', 'IFS', 'PS1', 'PS2', 'PS3', 'PS4', 'PROMPT_COMMAND', 'POSIXLY_CORRECT',
])

export function isOrdinaryVariable(name: string): boolean {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && !name.startsWith('BASH') && !name.startsWith('COMP_') && !SPECIAL_VARIABLES.has(name)
}

/** Unquoted text of a word: anything but blanks, metacharacters, quotes and `$`; `\x` escapes x. */
const UNQUOTED = /^(?:\\[^\n]|[^\s|&;<>()$`\\"'\x00-\x1f\x7f])+$/
/** A command name: plain characters only (no globs, braces, tilde or escapes). */
const COMMAND_NAME = /^[A-Za-z0-9_.\/+@:,-]+$/
const SINGLE_QUOTED = /^'[^']*'$/
const ANSI_C = /^\$'(?:\\[\s\S]|[^\\'])*'$/
/** A double-quoted string whose only expansions are `$NAME` and `${NAME}`; a `$` before a blank or the end is text. */
const DOUBLE_QUOTED = /^"(?:\\[\s\S]|\$[A-Za-z_][A-Za-z0-9_]*|\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$(?=[ \t\n"])|[^\\$`"])*"$/
/** One double-quoted substitution of plain words (`"$(git status --porcelain)"`): a single word. */
const QUOTED_SUBSTITUTION = /^"\$\((?:[^()"'`$\\#\n]|\$[A-Za-z_][A-Za-z0-9_]*)*\)"$/
const SIMPLE_EXPANSION = /^\$([A-Za-z_][A-Za-z0-9_]*)$/
const BRACED_EXPANSION = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/
const HEREDOC_DELIMITER = /^(?:'([A-Za-z0-9_.-]+)'|"([A-Za-z0-9_.-]+)"|\\([A-Za-z0-9_.-]+))$/
/** Control characters and blanks outside ASCII: the grammar and bash need not split words alike there. */
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u00a0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff]/

const MULTIBYTE_BEFORE_SPECIAL = /[^\x00-\x7f][\\`|{}[\]~@^]/

const WORD_PARTS = new Set(['arithmetic_expansion', 'word', 'raw_string', 'ansi_c_string', 'string', 'simple_expansion', 'expansion', 'number', 'concatenation', 'brace_expression', 'command_substitution'])

/** Words bash reads as reserved where a command could start; in a `for` list the grammar need not agree. */
const RESERVED = new Set(['!', '[[', ']]', '{', '}', 'case', 'coproc', 'do', 'done', 'elif', 'else', 'esac', 'fi', 'for', 'function', 'if', 'in', 'select', 'then', 'time', 'until', 'while'])

/**
 * A loop variable: lower-case letters and digits. Assigning it must not change what runs: bash's
 * own variables and every name a program reads from the environment (`PATH`, `LD_PRELOAD`,
 * `http_proxy`, `npm_config_*`, …) have upper-case letters or an underscore; a name already
 * exported stays exported when the loop assigns it.
 */
const LOOP_VARIABLE = /^[a-z][a-z0-9]*$/

/**
 * Throws `Outside` unless the whole script lies in the safe subset. `joined` says the text had
 * line continuations removed before parsing (then a heredoc's place in the text is not provable).
 */
export function checkSubset(root: SyntaxNode, src: string, joined: boolean): void {
  if (CONTROL.test(src)) outside('a control character or a non-ASCII blank')
  // In GBK, BIG5 or Shift-JIS the last byte of a UTF-8 character and the next ASCII byte can be read
  // as one character, swallowing a backslash, backtick or pipe that the grammar sees.
  if (MULTIBYTE_BEFORE_SPECIAL.test(src)) outside('a non-ASCII character right before a shell character')
  checkComments(root, src)
  checkVariableRedirects(root, src)
  new SubsetWalker(src, joined).statements(root)
}

/**
 * Bash starts a comment only where `#` begins a word: after a newline, an operator, or a blank
 * that is not escaped. tree-sitter-bash also starts one after an escaped blank (`a\ #x; touch m`
 * is one command for the grammar and two for bash, found by the generator), so a comment is only
 * trusted after a newline or operator, or a blank with an even run of backslashes before it.
 */
const REDIRECT_TYPES = new Set(['file_redirect', 'heredoc_redirect', 'herestring_redirect'])

/**
 * `{name}>file` makes bash open a new descriptor and assign its number to `name`, which may be an
 * array element whose subscript is evaluated (`echo {a[x]}>/dev/null` runs what `$x` hides;
 * `{BASH_CMDS[ls]}>/dev/null` changes what `ls` runs). tree-sitter-bash reads `{a[x]}` as an
 * ordinary argument, so a redirection right after a word ending in `}` is outside the subset.
 */
function checkVariableRedirects(node: SyntaxNode, src: string): void {
  const children = node.children
  for (let i = 0; i < children.length; i++) {
    const child = children[i]
    if (REDIRECT_TYPES.has(child.type) && i > 0 && children[i - 1].end === child.start && src[child.start - 1] === '}') {
      outside(`a redirection that assigns a descriptor to a variable: ${clipText(src.slice(children[i - 1].start, child.end))}`)
    }
    checkVariableRedirects(child, src)
  }
}

function checkComments(node: SyntaxNode, src: string): void {
  if (node.type === 'comment') {
    const before = node.start - 1
    if (before < 0 || /[\n;&|()]/.test(src[before])) return
    if (src[before] !== ' ' && src[before] !== '\t') outside(`a comment the shell may not see: ${clipText(src.slice(node.start, node.end))}`)
    let backslashes = 0
    while (before - 1 - backslashes >= 0 && src[before - 1 - backslashes] === '\\') backslashes++
    if (backslashes % 2 === 1) outside(`a comment after an escaped blank: ${clipText(src.slice(node.start, node.end))}`)
    return
  }
  for (const child of node.children) checkComments(child, src)
}

class SubsetWalker {
  /** How many loops, subshells and substitutions enclose the node being checked. */
  private nesting = 0

  constructor(
    private readonly src: string,
    private readonly joined: boolean,
  ) {}

  private nested(check: () => void): void {
    this.nesting++
    try {
      check()
    } finally {
      this.nesting--
    }
  }

  private text(node: SyntaxNode): string {
    return this.src.slice(node.start, node.end)
  }

  /**
   * Bash ends a command, a redirection or an operator's left side at an unescaped newline; the
   * grammar sometimes does not (`a | b | c $x` + newline + `bash <<'EOF'` made `bash` an argument of
   * `c`, found by the generator). Between the parts of such a node only blanks are allowed.
   */
  private blankGaps(node: SyntaxNode, from = 0, to = node.children.length): void {
    let pos = from === 0 ? node.start : node.children[from - 1].end
    for (let i = from; i < to; i++) {
      const child = node.children[i]
      const gap = this.src.slice(pos, child.start)
      if (!/^[ \t]*$/.test(gap)) outside(gap.includes('\n') ? `a line break inside ${clipText(this.text(node))}` : `text the grammar left out (${clipText(gap)}) in ${clipText(this.text(node))}`)
      pos = child.end
    }
  }

  /**
   * `program` and `list` (or the children `from`…`to` of a subshell, a loop body, a substitution):
   * statements joined by `;`, newline, `&&`, `||`.
   */
  statements(node: SyntaxNode, from = 0, to = node.children.length): void {
    for (let i = from + 1; i < to; i++) {
      const child = node.children[i]
      // `a` newline `&& b` is a syntax error for bash after it ran `a`; only blanks before an operator.
      if (!child.named && (child.type === '&&' || child.type === '||')) this.blankGaps(node, i, i + 1)
    }
    for (const child of node.children.slice(from, to)) {
      if (!child.named) {
        if (child.type === '&') outside('a command run in the background (&)')
        if (![';', '&&', '||', '\n'].includes(child.type)) outside(`the token ${JSON.stringify(child.type)}`)
        continue
      }
      this.statement(child)
    }
  }

  private statement(node: SyntaxNode): void {
    switch (node.type) {
      case 'comment':
        return
      case 'list':
        return this.statements(node)
      case 'pipeline':
        node.children.forEach((child, i) => {
          if (!child.named && i > 0) this.blankGaps(node, i, i + 1)
        })
        for (const child of node.children) {
          if (child.named) this.statement(child)
          else if (child.type !== '|') outside(`the pipe ${JSON.stringify(child.type)}`)
        }
        return
      case 'command':
        return this.command(node)
      case 'test_command':
        return this.test(node)
      case 'redirected_statement':
        return this.redirected(node)
      case 'for_statement':
        return this.forLoop(node)
      case 'subshell':
        return this.subshell(node)
      default:
        return outside(describe(node, this.text(node)))
    }
  }

  /**
   * `( … )`: its statements run in a copy of the shell, so nothing they change outlives it; it
   * holds subset statements only. `((` is arithmetic for bash (and tried first even where it is
   * not), so a subshell may not start with it.
   */
  private subshell(node: SyntaxNode): void {
    const text = this.text(node)
    const first = node.children[0]
    const last = node.children[node.children.length - 1]
    if (!first || first.type !== '(' || !last || last === first || last.type !== ')' || last.end !== node.end || last.start === last.end || text.startsWith('((')) {
      outside(describe(node, text))
    }
    this.nested(() => this.statements(node, 1, node.children.length - 1))
  }

  /**
   * `for NAME in WORDS; do BODY; done`: the words are expanded like arguments, the body (subset
   * statements) runs once per word with NAME set to it. Every later `$NAME` is a run-time word
   * whatever the list holds, so the body is checked as it would be for any value. `select` (it
   * prompts with PS3, which bash expands), `for ((…))`, a list without `in` and redirections on
   * the loop stay outside.
   */
  private forLoop(node: SyntaxNode): void {
    const text = this.text(node)
    const [keyword, name, inWord] = node.children
    const body = node.children[node.children.length - 1]
    if (keyword?.type !== 'for' || !text.startsWith('for') || name?.type !== 'variable_name' || inWord?.type !== 'in' || body?.type !== 'do_group' || body.end !== node.end) {
      return outside(describe(node, text))
    }
    const variable = this.text(name)
    if (!LOOP_VARIABLE.test(variable) || !isOrdinaryVariable(variable)) outside(`the loop variable ${variable}`)
    const list = node.children.slice(3, -1)
    const terminator = list[list.length - 1]?.type === ';' ? list.pop() : undefined
    // The header is one line: `for`, the name, `in` and the words are separated by blanks only.
    this.blankGaps(node, 1, 3 + list.length)
    for (const item of list) {
      if (!item.named || !WORD_PARTS.has(item.type)) outside(`the loop word ${this.text(item)}`)
      if (RESERVED.has(this.text(item))) outside(`the reserved word ${this.text(item)} in a loop's list`)
      this.word(item)
    }
    // Then `;` or a newline, and `do` after blanks or newlines.
    const headerEnd = list.length ? list[list.length - 1].end : inWord.end
    const gap = this.src.slice(headerEnd, body.start)
    if (!(terminator ? /^[ \t]*;[ \t\n]*$/ : /^[ \t]*\n[ \t\n]*$/).test(gap)) outside(`the loop header ${clipText(this.src.slice(node.start, body.start))}`)
    const first = body.children[0]
    const last = body.children[body.children.length - 1]
    if (first?.type !== 'do' || last?.type !== 'done' || last === first || !this.text(body).startsWith('do') || !this.text(body).endsWith('done')) {
      return outside(describe(node, text))
    }
    this.nested(() => this.statements(body, 1, body.children.length - 1))
  }

  private redirected(node: SyntaxNode): void {
    const body = node.children[0]
    // tree-sitter-bash hangs a trailing redirection on the whole list or pipeline (`a && b >/dev/null`)
    // where bash gives it to the last command. The subset's redirections are harmless on any command,
    // so both readings are safe; on a compound command (`{ …; } >f`, `[[ ]] >f`) none is allowed.
    if (!body || !['command', 'test_command', 'list', 'pipeline'].includes(body.type) || body.start !== node.start) {
      outside(`a redirection of ${body ? describe(body, this.text(body)) : 'nothing'}`)
    }
    this.statement(body)
    // Redirections follow on the same line (a heredoc's own body is checked by heredoc()); the
    // grammar may leave a last argument `-` out of the command (extract.ts adds it back).
    if (droppedDash(node, this.src)) this.blankGaps(node, 2)
    else this.blankGaps(node, 1)
    for (const child of node.children.slice(1)) this.redirect(child)
  }

  private command(node: SyntaxNode): void {
    this.blankGaps(node)
    for (const child of node.children) {
      switch (child.type) {
        case 'command_name': {
          const name = child.children[0]
          const plain = name && (name.type === 'word' ? this.text(name) : /^(raw_)?string$/.test(name.type) && name.children.every((part) => !part.named || part.type === 'string_content') ? this.text(name).slice(1, -1) : '')
          if (child.children.length !== 1 || !COMMAND_NAME.test(plain)) {
            outside(`the command name ${this.text(child)}`)
          }
          break
        }
        case 'variable_assignment':
          return outside(`the assignment ${this.text(child)}`)
        case 'file_redirect':
        case 'heredoc_redirect':
        case 'herestring_redirect':
          this.redirect(child)
          break
        case 'comment':
          break
        default:
          if (!child.named) outside(`the token ${JSON.stringify(child.type)}`)
          this.word(child)
      }
    }
  }

  /** One argument word (or one part of a concatenation). */
  private word(node: SyntaxNode): void {
    const text = this.text(node)
    switch (node.type) {
      case 'word':
        if (!UNQUOTED.test(text)) outside(`the word ${text}`)
        return
      case 'number':
        if (!/^-?[0-9]+$/.test(text)) outside(`the number ${text}`)
        return
      case 'brace_expression':
        // A sequence the policy expands itself (unquote.ts), at most 256 words.
        if (!/^\{(-?[0-9]+\.\.-?[0-9]+|[A-Za-z]\.\.[A-Za-z])(\.\.-?[0-9]+)?\}$/.test(text)) outside(`the brace expression ${text}`)
        return
      case 'raw_string':
        if (!SINGLE_QUOTED.test(text)) outside(`the string ${text}`)
        return
      case 'ansi_c_string':
        if (!ANSI_C.test(text)) outside(`the string ${text}`)
        return
      case 'string':
        return this.doubleQuoted(node)
      case 'simple_expansion':
      case 'expansion':
        return this.expansion(node)
      case 'arithmetic_expansion':
        // Numbers and operators only: with no name there is no variable to evaluate, no subscript,
        // and with balanced parentheses bash cannot fall back to reading `$( (…) )` as a command.
        if (!/^\$\(\([\s0-9+\-*\/%()<>=!&|^~?:,]*\)\)$/.test(text) || !balanced(text.slice(3, -2))) outside(`the arithmetic ${text}`)
        return
      case 'command_substitution':
      case 'process_substitution':
        return this.substitution(node)
      case 'concatenation':
        for (const child of node.children) {
          if (!child.named || !WORD_PARTS.has(child.type) || child.type === 'concatenation') outside(`the word ${text}`)
          this.word(child)
        }
        return
      default:
        return outside(describe(node, text))
    }
  }

  private doubleQuoted(node: SyntaxNode): void {
    const text = this.text(node)
    // The text around the substitutions is checked by the expression; each substitution by itself.
    const substitutions = node.children.filter((child) => child.type === 'command_substitution')
    let around = text
    for (const child of [...substitutions].reverse()) around = around.slice(0, child.start - node.start) + '$S' + around.slice(child.end - node.start)
    if (!DOUBLE_QUOTED.test(around)) outside(`the string ${text}`)
    for (const child of node.children) {
      if (!child.named) {
        if (child.type !== '"' && child.type !== '$') outside(`the string ${text}`)
        continue
      }
      if (child.type === 'string_content') continue
      if (child.type === 'simple_expansion' || child.type === 'expansion') this.expansion(child)
      else if (child.type === 'command_substitution') this.substitution(child)
      else outside(describe(child, this.text(child)))
    }
  }

  /**
   * `$(…)` and `<(…)` in argument position, holding subset statements on one line. Its output (or
   * the `/dev/fd/N` name of its pipe) is a run-time word like `$x`: the checks that keep a
   * variable's value from becoming a command name, a wrapper's option or an option of a program
   * with executing options (`find`, `git`, `sed`, …) apply to it unchanged. Kept out: backticks
   * (bash removes backslashes before parsing them again), `$((` (bash tries arithmetic first:
   * `$((x) )` runs x), `>(…)` (a command writes into it), newlines (comments, heredocs and `case`
   * inside `$(` are where parsers differ), and anything a `#` could hide.
   */
  private substitution(node: SyntaxNode): void {
    const text = this.text(node)
    const first = node.children[0]
    const last = node.children[node.children.length - 1]
    const open = node.type === 'command_substitution' ? '$(' : '<('
    if (first?.type !== open || !text.startsWith(open) || text.startsWith('$((') || last === first || last?.type !== ')' || last.end !== node.end || last.start === last.end) {
      return outside(describe(node, text))
    }
    if (text.includes('\n')) outside(`a line break inside ${clipText(text)}`)
    const hidden = (n: SyntaxNode): boolean => n.type === 'comment' || (n.type === 'word' && this.text(n).startsWith('#')) || n.children.some(hidden)
    if (hidden(node)) outside(`a # inside ${clipText(text)}`)
    this.nested(() => this.statements(node, 1, node.children.length - 1))
  }

  private expansion(node: SyntaxNode): void {
    const text = this.text(node)
    const name = (SIMPLE_EXPANSION.exec(text) ?? BRACED_EXPANSION.exec(text))?.[1]
    if (!name) outside(`the expansion ${text}`)
    if (!isOrdinaryVariable(name!)) outside(`the variable ${text}`)
  }

  private redirect(node: SyntaxNode): void {
    const text = this.text(node)
    if (node.type === 'heredoc_redirect') return this.heredoc(node)
    if (node.type === 'herestring_redirect') {
      const parts = node.children.filter((child) => child.named)
      if (parts.length !== 1 || !['word', 'raw_string', 'string', 'ansi_c_string'].includes(parts[0].type)) outside(`the redirection ${text}`)
      return this.word(parts[0])
    }
    if (node.type !== 'file_redirect') return outside(describe(node, text))
    const descriptor = node.children.find((child) => child.type === 'file_descriptor')
    const operator = node.children.find((child) => !child.named)
    const targets = node.children.filter((child) => child.named && child.type !== 'file_descriptor')
    const fd = descriptor ? this.text(descriptor) : undefined
    const op = operator ? this.text(operator) : ''
    const target = targets.length === 1 ? this.text(targets[0]) : undefined
    if (target === undefined || (descriptor && !/^[0-9]$/.test(fd!))) return outside(`the redirection ${text}`)
    // Output: only thrown away, or one standard stream joined to the other.
    if (['>', '>>', '&>', '&>>', '>|'].includes(op) && targets[0].type === 'word' && ['/dev/null', '/dev/stdout', '/dev/stderr'].includes(target)) return
    if (op === '>&' && (fd === undefined || fd === '1' || fd === '2') && (target === '1' || target === '2')) return
    // Input from a process substitution reads a pipe.
    if (op === '<' && (fd === undefined || fd === '0') && targets[0].type === 'process_substitution') return this.substitution(targets[0])
    // Input: a file named literally, read from standard input only (no `3<`, no `<&`, no `<>`).
    if (op === '<' && (fd === undefined || fd === '0')) {
      this.word(targets[0])
      if (!/^(word|raw_string|string)$/.test(targets[0].type) || /[$*?[\]{}~\\]/.test(target)) outside(`the input ${text}`)
      const path = target.replace(/^['"]|['"]$/g, '')
      // bash opens sockets for these names itself; a glob or brace could not spell them (none allowed).
      if (/^\/dev\/(tcp|udp)\//.test(path) || path.includes('/dev/tcp/') || path.includes('/dev/udp/')) outside(`the socket ${text}`)
      // Opening some devices does something even for reading (a watchdog arms itself): only these.
      if (/^\/dev\//.test(path) && !/^\/dev\/(null|zero|u?random|stdin|fd\/[0-9]+)$/.test(path)) outside(`the device ${text}`)
      return
    }
    return outside(`the redirection ${text}`)
  }

  /**
   * A heredoc is data only with a quoted delimiter, and only if bash and the parser end it at the
   * same line: the end is found here again by bash's rule (the first line equal to the delimiter,
   * after leading tabs for `<<-`), independently of the grammar.
   */
  private heredoc(node: SyntaxNode): void {
    const text = this.text(node)
    if (this.joined) outside('a heredoc in a line with line continuations')
    if (this.nesting) outside('a heredoc inside a loop, subshell or substitution')
    const start = node.children.find((child) => child.type === 'heredoc_start')
    const body = node.children.find((child) => child.type === 'heredoc_body')
    const end = node.children.find((child) => child.type === 'heredoc_end')
    const operator = node.children.find((child) => !child.named && child.type.startsWith('<<'))
    const delimiter = start && HEREDOC_DELIMITER.exec(this.text(start))
    // The grammar gives `cat -<<'EOF'` an operator `<<` spanning `-<<`: bash's word `-` is in it.
    if (!start || !end || !operator || !delimiter || this.text(operator) !== operator.type) return outside(`the heredoc ${clipText(text)}`)
    const word = delimiter[1] ?? delimiter[2] ?? delimiter[3]
    const stripTabs = this.text(operator) === '<<-'
    // The body starts on the line after the one holding the operator; a second heredoc there is refused.
    const bodyStart = this.src.indexOf('\n', start.end) + 1
    if (bodyStart === 0) return outside('a heredoc without a body')
    if (/<</.test(this.src.slice(start.end, bodyStart))) outside('two heredocs on one line')
    let lineStart = bodyStart
    let found = -1
    while (lineStart <= this.src.length) {
      let lineEnd = this.src.indexOf('\n', lineStart)
      if (lineEnd < 0) lineEnd = this.src.length
      let line = this.src.slice(lineStart, lineEnd)
      if (stripTabs) line = line.replace(/^\t+/, '')
      if (line === word) {
        found = lineStart
        break
      }
      lineStart = lineEnd + 1
    }
    if (found < 0) return outside(`the heredoc ${this.text(start)} has no end line`)
    const endLineStart = this.src.lastIndexOf('\n', end.start - 1) + 1
    // The grammar may start the body after the first line's indentation; anything more (a quoted
    // string that spans lines moves bash's body start further down) is refused.
    const bodyBegins = body ? /^[ \t]*$/.test(this.src.slice(bodyStart, body.start)) && body.start >= bodyStart : true
    if (endLineStart !== found || this.text(end) !== word || !bodyBegins || (body && body.end > end.start)) {
      outside(`the heredoc ${this.text(start)} ends elsewhere for bash than for the parser`)
    }
    for (const child of node.children) {
      if (child === start || child === body || child === end || child === operator) continue
      if (child.type === 'file_redirect') this.redirect(child)
      else if (child.named) this.statement(child)
      else if (!['&&', '||', '|', ';'].includes(child.type)) outside(`the token ${JSON.stringify(child.type)}`)
    }
    if (body) {
      for (const part of body.children) if (part.type !== 'heredoc_content') outside(`the heredoc ${this.text(start)} body`)
    }
  }

  /**
   * `[ … ]`: the arguments (the grammar's expression tree flattened back to words) must be words of
   * the subset, never `-v`/`-R` (they evaluate a subscript), never `<`/`>` (bash redirects there), and
   * a word holding an expansion may not land where `[` could read it as an operator.
   */
  private test(node: SyntaxNode): void {
    const text = this.text(node)
    if (!text.startsWith('[ ') && !text.startsWith('[\t')) outside(describe(node, text))
    const args: { text: string; literal: boolean }[] = []
    const flatten = (n: SyntaxNode): void => {
      for (const child of n.children) {
        if (child.type === 'unary_expression' || child.type === 'binary_expression') flatten(child)
        else if (child.type === 'test_operator') args.push({ text: this.text(child), literal: true })
        else if (!child.named) {
          if (child === n.children[0] && n === node && child.type === '[') continue
          if (child === n.children[n.children.length - 1] && n === node && child.type === ']') continue
          if (!['=', '==', '!=', '!'].includes(child.type)) outside(`the test operator ${JSON.stringify(child.type)}`)
          args.push({ text: child.type, literal: true })
        } else if (WORD_PARTS.has(child.type)) {
          this.word(child)
          const expands = (type: string) => type.endsWith('expansion') || type === 'command_substitution'
          if (expands(child.type) || (child.type === 'concatenation' && child.children.some((part) => expands(part.type)))) {
            outside(`the unquoted expansion ${this.text(child)} in [ … ]`)
          }
          if (child.type === 'word' && /[*?[\]{}~]/.test(this.text(child))) outside(`the pattern ${this.text(child)} in [ … ]`)
          args.push({ text: this.text(child), literal: !/\$/.test(this.text(child)) })
        } else outside(describe(child, this.text(child)))
      }
    }
    if (text.includes('\n')) outside(`a line break inside ${clipText(text)}`)
    flatten(node)
    checkTestArgs(args, text)
  }
}

const BINARY_TEST = new Set(['=', '==', '!=', '-eq', '-ne', '-lt', '-le', '-gt', '-ge', '-nt', '-ot', '-ef', '-a', '-o'])

/** The rules shared by `[ … ]` and `test …`; `literal` is false for a word whose value comes from a variable. */
export function checkTestArgs(args: readonly { text: string; literal: boolean }[], display: string): void {
  for (const arg of args) if (arg.literal && /^-[vR]$/.test(arg.text)) outside(`${arg.text} in ${display} evaluates a subscript`)
  if (args.every((arg) => arg.literal)) return
  // Bash decides by the number of arguments; only these shapes keep a variable's value an operand.
  const ok =
    args.length === 1 ||
    (args.length === 2 && args[0].literal) ||
    (args.length === 3 && args[1].literal && BINARY_TEST.has(args[1].text))
  if (!ok) outside(`a variable where ${display} could read an operator`)
}

/** The builtins of the subset; every other builtin changes the shell or evaluates its arguments. */
const SUBSET_BUILTINS = new Set(['set', 'echo', 'printf', 'test', '[', 'true', 'false', ':', 'pwd', 'cd', 'type', 'command', 'builtin', 'help', 'times'])
const BUILTINS = new Set([
  '.', ':', '[', 'alias', 'bg', 'bind', 'break', 'builtin', 'caller', 'cd', 'command', 'compgen', 'complete', 'compopt',
  'continue', 'declare', 'dirs', 'disown', 'echo', 'enable', 'eval', 'exec', 'exit', 'export', 'false', 'fc', 'fg',
  'getopts', 'hash', 'help', 'history', 'jobs', 'kill', 'let', 'local', 'logout', 'mapfile', 'popd', 'printf', 'pushd',
  'pwd', 'read', 'readarray', 'readonly', 'return', 'set', 'shift', 'shopt', 'source', 'suspend', 'test', 'times',
  'trap', 'true', 'type', 'typeset', 'ulimit', 'umask', 'unalias', 'unset', 'wait',
  // Keywords tree-sitter-bash reads as command names.
  'coproc', 'time', 'function', 'select',
])

/**
 * Throws `Outside` for a command the subset does not hold by its name: a builtin that changes the
 * shell (`declare`, `read`, `shopt`, `alias`, `hash`, `set`, `source`, …) or evaluates a name or a
 * number (`let`, `printf -v`, `test -v`, `unset`, `getopts`, `wait -p`). `time` is kept out because
 * tree-sitter-bash reads it as a command and bash as a keyword. A path-qualified name is a program.
 */
export function checkCommandName(words: readonly Word[]): void {
  const name = words[0]?.text
  if (name === undefined || name.includes('/')) return
  if (!BUILTINS.has(name)) return
  if (!SUBSET_BUILTINS.has(name)) outside(`the builtin ${name}`)
  const args = words.slice(1)
  switch (name) {
    case 'printf': {
      // `printf -v NAME` assigns, and evaluates NAME's subscript. The first word decides.
      const first = args[0]
      if (!first || !first.literal || first.glob || (first.text.startsWith('-') && first.text !== '--')) outside('printf with an option or a computed format')
      if (first.text === '--' && (!args[1] || !args[1].literal || args[1].glob)) outside('printf with a computed format')
      return
    }
    case 'test':
    case '[': {
      const operands = name === '[' && args[args.length - 1]?.text === ']' ? args.slice(0, -1) : args
      // A computed operand must be one double-quoted string: unquoted, it could split into operators.
      if (operands.some((word) => word.glob || (!word.literal && !DOUBLE_QUOTED.test(word.source) && !QUOTED_SUBSTITUTION.test(word.source)))) {
        outside(`an unquoted expansion or pattern in ${name}`)
      }
      return checkTestArgs(operands.map((word) => ({ text: word.text, literal: word.literal })), name)
    }
    case 'set': {
      // Only the error-handling options scripts start with: -e, -u, -o pipefail (and their +).
      // Not -x: it prints PS4, which bash expands. No operands: they would set $1….
      const named = ['pipefail', 'errexit', 'nounset']
      for (let i = 0; i < args.length; i++) {
        const word = args[i]
        if (!word.literal || word.glob) outside('set with a computed word')
        if (/^[-+][eu]+$/.test(word.text)) continue
        if (/^[-+][eu]*o$/.test(word.text) && args[i + 1]?.literal && named.includes(args[i + 1].text)) {
          i++
          continue
        }
        outside(`set ${word.text}`)
      }
      if (!args.length) outside('set without options (prints every variable and function)')
      return
    }
    case 'cd':
    case 'type':
    case 'help':
      // Their options only select what is printed or which directory; a computed word stays an operand or an option of theirs.
      return
    case 'command':
    case 'builtin':
      // Seen through by the wrappers: what they run is checked as itself.
      return
  }
}

/**
 * tree-sitter-bash leaves a last argument `-` out of the command before a heredoc or a redirection
 * with a descriptor number (`cat - <<'EOF'`, `cd - 2>/dev/null`, `ls && cat - 2>/dev/null`): the
 * text between the statement and its first redirection is then exactly blanks, `-`, blanks, which
 * bash reads as the word `-` of the last command. That command, or undefined.
 */
export function droppedDash(node: SyntaxNode, src: string): SyntaxNode | undefined {
  const [body, first] = node.children
  if (node.type !== 'redirected_statement' || !body || !first || !/^[ \t]+-[ \t]+$/.test(src.slice(body.end, first.start))) return undefined
  let last: SyntaxNode | undefined = body
  while (last && (last.type === 'list' || last.type === 'pipeline')) last = last.children[last.children.length - 1]
  return last?.type === 'command' && last.end === body.end ? last : undefined
}

function balanced(text: string): boolean {
  let depth = 0
  for (const ch of text) {
    if (ch === '(') depth++
    else if (ch === ')' && --depth < 0) return false
  }
  return depth === 0
}

function describe(node: SyntaxNode, text: string): string {
  const what: Record<string, string> = {
    arithmetic_expansion: 'arithmetic',
    compound_statement: 'a { … } group',
    subshell: 'a subshell',
    command_substitution: 'a command substitution',
    process_substitution: 'a process substitution',
    function_definition: 'a function definition',
    variable_assignment: 'an assignment',
    variable_assignments: 'an assignment',
    test_command: 'a [[ … ]] test',
    negated_command: 'a negated command (!)',
    if_statement: 'an if statement',
    for_statement: 'a for loop',
    c_style_for_statement: 'a for (( )) loop',
    while_statement: 'a while loop',
    case_statement: 'a case statement',
    declaration_command: 'a declaration',
    unset_command: 'unset',
    expansion: 'the expansion',
    translated_string: 'a $"…" string',
    ERROR: 'a syntax error',
  }
  const kind = node.type === 'compound_statement' && text.startsWith('((') ? 'arithmetic' : what[node.type] ?? `a ${node.type.replace(/_/g, ' ')}`
  return `${kind} ${clipText(text)}`.trim()
}

function clipText(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim()
  return line.length > 40 ? line.slice(0, 39) + '…' : line
}
