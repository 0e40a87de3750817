import type { Parser } from 'web-tree-sitter'
import { inspect } from './commands.js'
import { isRiskyVariable } from './environment.js'
import { ParseTimeout, parseScript, type SyntaxNode } from './parser.js'
import { Uncertain, literalWord, wordsOf, type Word } from './unquote.js'
import { REDIRECTS, heredocText, operatorOf, outputTargets } from './redirects.js'
import { WRAPPERS, type Stdin } from './wrappers.js'
import { Outside, checkCommandName, checkSubset, droppedDash } from './subset.js'
import { gitWithoutGlobalOptions } from './git-options.js'

/** A simple command found in the line, after wrappers were seen through. */
export interface CommandFinding {
  kind: 'command'
  /** The words after quote removal; `words[0]` is the name. Empty for a bare redirection. */
  words: Word[]
  /** The command as shown in messages. */
  display: string
  /** Output redirections to anything but /dev/null, &1 or &2, as written. */
  redirects: string[]
  /** Why this command needs approval even if a rule allows it. */
  flags: string[]
  /** A wrapper seen through (`timeout 5 …`): only deny and ask rules apply to it. */
  transparent: boolean
  /**
   * The same command spelled otherwise, for rules only: `git --no-pager log` is also `git log`.
   * Every rule list matches any spelling. Never a different command.
   */
  also?: Word[][]
}

/** Something the parser cannot read with certainty. */
export interface UncertainFinding {
  kind: 'uncertain'
  why: string
}

/** A statement that is not a command but still needs approval (`PATH=/tmp:$PATH`). */
export interface FlagFinding {
  kind: 'flag'
  why: string
  display: string
}

/**
 * Something outside the safe subset (see subset.ts): the line can be at most `ask`. It never
 * means the line is dangerous, only that the policy does not prove it harmless.
 */
export interface OutsideFinding {
  kind: 'outside'
  why: string
}

export type Finding = CommandFinding | UncertainFinding | FlagFinding | OutsideFinding

/** Scripts inside scripts (`bash -c "eval '…'"`) deeper than this are not read. */
export const MAX_NESTING = 8

/** All parsing for one line must finish within this time; hostile input can be slow to recover. */
export const PARSE_BUDGET_MS = 1000

interface Scope {
  src: string
  depth: number
  /** Output redirections of enclosing statements (`{ a; b; } > file`). */
  redirects: string[]
}

interface Info {
  display: string
  redirects: string[]
  flags: string[]
  stdin: Stdin
  depth: number
}

/** Every simple command of a command line, in order, with what could not be read. */
export function extract(parser: Parser, text: string, maxCommands: number): Finding[] {
  const extractor = new Extractor(parser, performance.now() + PARSE_BUDGET_MS)
  try {
    extractor.script(text, 0, [])
  } catch (error) {
    // A stack overflow on absurd nesting, or a parse past its deadline: say so rather than guess.
    if (error instanceof ParseTimeout) extractor.uncertain(`parsing took longer than ${PARSE_BUDGET_MS} ms`)
    else if (error instanceof RangeError) extractor.uncertain('the command is nested too deeply')
    else throw error
  }
  if (extractor.count > maxCommands) extractor.uncertain(`more than ${maxCommands} commands`)
  // After a `cd`, `./x` is another directory's x than the one a rule for `./x` was written for.
  if (extractor.changesDirectory && extractor.relativeName) extractor.outside(`the relative command name ${extractor.relativeName} in a line with cd`)
  return extractor.findings
}

class Extractor {
  readonly findings: Finding[] = []
  count = 0
  /** A `cd` runs somewhere in the line (in any subshell or loop: it is not tracked where). */
  changesDirectory = false
  /** The first command name that is a relative path (`./x`, `bin/x`). */
  relativeName: string | undefined
  /** Commands whose last argument `-` the grammar dropped (see droppedDash). */
  private readonly dashed = new Set<SyntaxNode>()

  constructor(
    private readonly parser: Parser,
    private readonly deadline: number,
  ) {}

  uncertain(why: string): void {
    if (!this.findings.some((finding) => finding.kind === 'uncertain' && finding.why === why)) {
      this.findings.push({ kind: 'uncertain', why })
    }
  }

  /** Records the first reason per line that it is outside the safe subset. */
  outside(why: string): void {
    if (!this.findings.some((finding) => finding.kind === 'outside')) this.findings.push({ kind: 'outside', why })
  }

  script(text: string, depth: number, redirects: string[]): void {
    if (depth > MAX_NESTING) return this.uncertain(`scripts are nested more than ${MAX_NESTING} levels deep`)
    const src = this.joinContinuations(text)
    const { root, hasError } = parseScript(this.parser, src, this.deadline)
    if (hasError) this.uncertain(syntaxError(root, src))
    // A script given as text (`bash -c`, `eval`, `watch`, a shell's heredoc) is parsed again by a
    // shell whose options and parser the policy does not control: its commands are still found for
    // deny, but the line is never allowed.
    if (depth > 0) this.outside('a script given as text (bash -c, eval, …)')
    else this.subset(() => checkSubset(root, src, src !== text))
    this.walk(root, { src, depth, redirects })
  }

  private subset(check: () => void): void {
    try {
      check()
    } catch (error) {
      if (!(error instanceof Outside)) throw error
      this.outside(error.message)
    }
  }

  /**
   * Backslash-newline joins lines before bash splits words (`r\<newline>m` is `rm`), but the
   * grammar treats it as a word break. Remove it everywhere bash would: not inside single
   * quotes, ANSI-C strings, heredoc bodies or comments.
   */
  private joinContinuations(text: string): string {
    if (!text.includes('\\\n')) return text
    const protectedRanges: [number, number][] = []
    const visit = (node: SyntaxNode) => {
      if (['raw_string', 'ansi_c_string', 'heredoc_body', 'comment'].includes(node.type)) protectedRanges.push([node.start, node.end])
      else node.children.forEach(visit)
    }
    visit(parseScript(this.parser, text, this.deadline).root)
    let out = ''
    let from = 0
    for (let i = text.indexOf('\\\n'); i >= 0; i = text.indexOf('\\\n', i + 1)) {
      let run = 0
      while (i - run >= 0 && text[i - run] === '\\') run++
      if (run % 2 === 0 || protectedRanges.some(([start, end]) => i >= start && i < end)) continue
      out += text.slice(from, i)
      from = i + 2
    }
    return out + text.slice(from)
  }

  private walk(node: SyntaxNode, scope: Scope): void {
    switch (node.type) {
      case 'command':
      case 'declaration_command':
      case 'unset_command':
        return this.command(node, scope)
      case 'redirected_statement':
        return this.redirected(node, scope)
      case 'function_definition':
        return this.functionDefinition(node, scope)
      case 'variable_assignment':
        return this.standaloneAssignment(node, scope)
      case 'command_substitution':
      case 'process_substitution':
        // Inside backticks bash removes the backslash of \`, \$ and \\ and then parses the text, so
        // `echo \`rm\`` nests a substitution the grammar reads as a plain word: parse it again.
        const first = node.children[0]
        const last = node.children[node.children.length - 1]
        if (first?.type === '`' && last !== first && scope.src.slice(first.end, last.start).includes('\\')) {
          const body = scope.src.slice(first.end, last.start).replace(/\\([$`\\])/g, '$1')
          return this.script(body, scope.depth + 1, [])
        }
        // Their output goes to the enclosing command, not to its redirections.
        return this.walkChildren(node, { ...scope, redirects: [] })
      case 'file_redirect':
      case 'heredoc_redirect':
      case 'herestring_redirect':
        return this.walkRedirect(node, scope)
      case 'comment':
        return
      case 'expansion':
        if (/@P\}$/.test(scope.src.slice(node.start, node.end))) {
          this.uncertain(`prompt expansion ${scope.src.slice(node.start, node.end)} can run commands`)
        }
        break
    }
    this.walkChildren(node, scope)
  }

  private walkChildren(node: SyntaxNode, scope: Scope): void {
    for (const child of node.children) if (child.named || child.type === 'ERROR') this.walk(child, scope)
  }

  private walkRedirect(node: SyntaxNode, scope: Scope): void {
    const inner = { ...scope, redirects: [] }
    for (const child of node.children) {
      if (!child.named) continue
      if (child.type === 'heredoc_body') {
        this.heredocBody(node, scope)
        continue
      }
      // A heredoc's trailing `&& cmd` or `| cmd` is a statement of the enclosing list.
      if (node.type === 'heredoc_redirect' && !REDIRECTS.has(child.type) && !child.type.startsWith('heredoc_')) this.walk(child, scope)
      else this.walk(child, inner)
    }
  }

  /**
   * The grammar misses substitutions at the start of an indented heredoc line, so the body of an
   * unquoted heredoc is read again as the inside of a double-quoted string, which expands the same
   * way. A `"` is literal in a heredoc but would end that string: first every `"` is escaped to find
   * where the substitutions are, then the quotes inside them are put back and the text parsed again.
   */
  private heredocBody(redirect: SyntaxNode, scope: Scope): void {
    const heredoc = heredocText(redirect, scope.src)
    if (!heredoc || heredoc.quoted || !/[$`]/.test(heredoc.text)) return
    const body = heredoc.text
    const escaped = this.asString(body.replace(/"/g, '\\"'))
    if (!escaped) return this.uncertain('a heredoc body could not be read with certainty')
    // Offsets in the escaped text map back to the body by counting the added backslashes.
    const toBody: number[] = []
    for (let i = 0, j = 0; i < body.length; i++, j++) {
      if (body[i] === '"') toBody[j++] = i
      toBody[j] = i
    }
    toBody.push(body.length)
    let restored = ''
    let from = 0
    for (const child of escaped.string.children) {
      if (!child.named || child.type === 'string_content') continue
      const start = toBody[child.start - 1] ?? body.length
      const end = toBody[child.end - 1] ?? body.length
      restored += body.slice(from, start).replace(/"/g, '\\"') + body.slice(start, end)
      from = end
    }
    restored += body.slice(from).replace(/"/g, '\\"')
    const final = restored === escaped.text.slice(1, -1) ? escaped : this.asString(restored)
    const chosen = final ?? escaped
    if (!final || chosen.hasError) this.uncertain('a heredoc body could not be read with certainty')
    this.walkChildren(chosen.string, { src: chosen.text, depth: scope.depth + 1, redirects: [] })
  }

  /** Parses `"text"`; undefined unless the whole of it is one string. */
  private asString(text: string): { string: SyntaxNode; text: string; hasError: boolean } | undefined {
    const synthetic = `"${text}"`
    const { root, hasError } = parseScript(this.parser, synthetic, this.deadline)
    let string = root
    while (string.type !== 'string' && string.children.length) string = string.children[0]
    if (string.type !== 'string' || string.start !== 0 || string.end !== synthetic.length) return undefined
    return { string, text: synthetic, hasError }
  }

  private redirected(node: SyntaxNode, scope: Scope): void {
    const redirects = node.children.filter((child) => REDIRECTS.has(child.type))
    const body = node.children.find((child) => child.named && !REDIRECTS.has(child.type) && child.type !== 'comment')
    const targets = this.targetsOf(redirects, scope.src)
    if (!body) {
      if (targets.length) {
        this.findings.push({ kind: 'command', words: [], display: clip(scope.src.slice(node.start, node.end)), redirects: targets, flags: [], transparent: false })
      }
    } else {
      const inner = { ...scope, redirects: [...scope.redirects, ...targets] }
      const dashed = droppedDash(node, scope.src)
      if (dashed) this.dashed.add(dashed)
      if (body.type === 'command') this.command(body, inner, node, this.stdinOf(redirects, scope.src))
      else this.walk(body, inner)
    }
    for (const redirect of redirects) this.walkRedirect(redirect, scope)
  }

  private functionDefinition(node: SyntaxNode, scope: Scope): void {
    // The body runs whenever the function is called, with the definition's redirections.
    const targets = this.targetsOf(node.children.filter((child) => REDIRECTS.has(child.type)), scope.src)
    const inner = { ...scope, redirects: [...scope.redirects, ...targets] }
    for (const child of node.children) {
      if (!child.named) continue
      if (REDIRECTS.has(child.type)) this.walkRedirect(child, scope)
      else this.walk(child, inner)
    }
  }

  /** The output targets of a statement's redirections; one that cannot be read is reported and adds none. */
  private targetsOf(redirects: SyntaxNode[], src: string): string[] {
    try {
      return redirects.flatMap((redirect) => outputTargets(redirect, src))
    } catch (error) {
      if (!(error instanceof Uncertain)) throw error
      this.uncertain(error.message)
      return []
    }
  }

  private standaloneAssignment(node: SyntaxNode, scope: Scope): void {
    const name = assignedName(node, scope.src)
    if (name && isRiskyVariable(name)) {
      this.findings.push({ kind: 'flag', why: `sets ${name}`, display: clip(scope.src.slice(node.start, node.end)) })
    }
    this.walkChildren(node, { ...scope, redirects: [] })
  }

  private command(node: SyntaxNode, scope: Scope, span: SyntaxNode = node, stdin?: Stdin): void {
    const src = scope.src
    const keyword = node.type !== 'command'
    const parts: SyntaxNode[] = []
    const redirects: SyntaxNode[] = []
    const flags: string[] = []
    const inner = { ...scope, redirects: [] }
    for (const child of node.children) {
      if (child.type === 'variable_assignment') {
        const name = assignedName(child, src)
        if (name && isRiskyVariable(name)) flags.push(`sets ${name}`)
        this.walkChildren(child, inner)
        if (keyword) parts.push(child)
      } else if (REDIRECTS.has(child.type)) {
        redirects.push(child)
        this.walkRedirect(child, scope)
      } else if (child.type === 'subshell' || child.type === 'compound_statement') {
        // `coproc (cmd)` arrives as a command whose child is the subshell.
        this.walk(child, scope)
      } else if (child.type !== 'comment') {
        parts.push(child)
        if (child.named) this.walk(child, inner)
      }
    }
    let words: Word[] = []
    let targets: string[] = []
    try {
      for (const group of adjacentGroups(parts)) words.push(...wordsOf(group, src))
      if (this.dashed.has(node)) words.push(literalWord('-'))
      targets = [...scope.redirects, ...redirects.flatMap((redirect) => outputTargets(redirect, src))]
    } catch (error) {
      if (!(error instanceof Uncertain)) throw error
      this.count++
      return this.uncertain(error.message)
    }
    stdin ??= this.stdinOf(redirects, src)
    this.resolve(words, { display: clip(src.slice(span.start, span.end)), redirects: targets, flags, stdin, depth: scope.depth })
  }

  /** Decides what a list of words runs: a wrapper, a shell script, or itself. */
  private resolve(words: Word[], info: Info): void {
    if (!words.length) {
      if (info.redirects.length || info.flags.length) this.emit(words, info, info.flags, false)
      return
    }
    this.count++
    const name = words[0]
    if (!name.literal || name.glob) return this.uncertain(`the command name ${name.source} is computed at run time`)
    // tree-sitter-bash has no `coproc` and no `time` keyword: `time { cmd; }` arrives as the words
    // `time { cmd` and a command `}`. An unquoted brace in command position is bash's group syntax.
    if (name.source === '}') return
    if (name.source === '{') {
      this.count--
      const display = info.display === displayWords(words) ? displayWords(words.slice(1)) : info.display
      return this.resolve(words.slice(1), { ...info, display })
    }
    const pathQualified = name.text.includes('/')
    const base = pathQualified ? name.text.slice(name.text.lastIndexOf('/') + 1) : name.text
    if (!pathQualified && base === 'cd') this.changesDirectory = true
    if (pathQualified && !name.text.startsWith('/')) this.relativeName ??= name.text
    this.subset(() => checkCommandName(words))
    const wrapper = WRAPPERS.get(base)
    const unwrapped = wrapper?.unwrap(words, info.stdin)
    if (wrapper && unwrapped && unwrapped.kind !== 'plain') {
      // A path-qualified wrapper (`./timeout`) may be anything: it needs a rule of its own.
      this.emit(words, info, [...info.flags, ...(unwrapped.flags ?? [])], wrapper.transparent && !pathQualified)
      const shifting = unwrapped.kind === 'argv' ? wrapperArgument(words, unwrapped.words) : undefined
      if (shifting) return this.uncertain(`the ${base} argument ${shifting.source} is computed at run time and could change what it runs`)
      switch (unwrapped.kind) {
        case 'uncertain':
          return this.uncertain(unwrapped.why)
        case 'argv': {
          const flags = (unwrapped.assignments ?? []).filter(isRiskyVariable).map((variable) => `sets ${variable}`)
          return this.resolve(unwrapped.words, { ...info, display: displayWords(unwrapped.words), flags })
        }
        case 'script':
          return this.scriptOf(unwrapped.words, info)
      }
    }
    const inspection = inspect(base, words)
    const also = base === 'git' ? gitWithoutGlobalOptions(words) : undefined
    this.emit(words, info, [...info.flags, ...(unwrapped?.flags ?? []), ...inspection.flags], false, also && [also])
    for (const command of inspection.commands) {
      this.resolve(command, { display: displayWords(command), redirects: [], flags: [], stdin: undefined, depth: info.depth })
    }
    for (const script of inspection.scripts) this.scriptOf(script, { ...info, redirects: [] })
  }

  private scriptOf(words: Word[], info: Info): void {
    const computed = words.find((word) => !word.literal)
    if (computed) return this.uncertain(`the script ${computed.source} is computed at run time`)
    this.script(words.map((word) => word.text).join(' '), info.depth + 1, info.redirects)
  }

  private emit(words: Word[], info: Info, flags: string[], transparent: boolean, also?: Word[][]): void {
    this.findings.push({ kind: 'command', words, display: info.display, redirects: info.redirects, flags, transparent, ...(also && { also }) })
  }

  /** What a shell reading stdin would run: the heredoc or here-string of the command. */
  private stdinOf(redirects: SyntaxNode[], src: string): Stdin {
    let stdin: Stdin
    for (const redirect of redirects) {
      if (redirect.type === 'heredoc_redirect') {
        const heredoc = heredocText(redirect, src) ?? { quoted: true, text: '' }
        stdin = !heredoc.quoted && /[\\$`]/.test(heredoc.text) ? { unknown: true } : { text: heredoc.text }
      } else if (redirect.type === 'herestring_redirect') {
        const parts = redirect.children.filter((child) => child.named)
        try {
          const words = parts.length ? wordsOf(parts, src) : []
          stdin = words.length === 1 && words[0].literal ? { text: words[0].text + '\n' } : { unknown: true }
        } catch {
          stdin = { unknown: true }
        }
      } else if (redirect.type === 'file_redirect' && operatorOf(redirect, src).startsWith('<')) {
        stdin = { unknown: true }
      }
    }
    return stdin
  }
}

/**
 * The first word of a wrapper's own part (its options and operands, before the command it runs)
 * whose value is only known at run time. Such a word decides where the command starts: with
 * `w='5 touch m'`, `timeout $w ls` runs `touch`; with `u=-u`, `env "$u" ls touch m` does too.
 */
function wrapperArgument(words: readonly Word[], command: readonly Word[]): Word | undefined {
  const start = words.findIndex((word, i) => i > 0 && command.includes(word))
  return words.slice(1, start < 0 ? undefined : start).find((word) => !word.literal || word.glob)
}

function assignedName(node: SyntaxNode, src: string): string | undefined {
  const name = node.children.find((child) => child.type === 'variable_name' || child.type === 'subscript')
  if (!name) return undefined
  const text = src.slice(name.start, name.end)
  return name.type === 'subscript' ? text.slice(0, text.indexOf('[')) : text
}

/** Nodes with no space between them form one shell word (`a"b"$c`). */
function adjacentGroups(nodes: SyntaxNode[]): SyntaxNode[][] {
  const groups: SyntaxNode[][] = []
  for (const node of nodes) {
    const last = groups[groups.length - 1]
    if (last && last[last.length - 1].end === node.start) last.push(node)
    else groups.push([node])
  }
  return groups
}

/** The first ERROR or MISSING node, in reading order. */
function syntaxError(root: SyntaxNode, src: string): string {
  const stack = [root]
  while (stack.length) {
    const node = stack.pop()!
    if (node.missing) return `syntax error: missing "${node.type}"`
    if (node.type === 'ERROR') return `syntax error near "${clip(src.slice(node.start, node.end), 40)}"`
    for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i])
  }
  return 'syntax error'
}

/** A command as shown in messages: one line, at most 200 characters. */
export function clip(text: string, max = 200): string {
  const line = text.replace(/\\\n/g, ' ').replace(/\s+/g, ' ').trim()
  return line.length > max ? line.slice(0, max - 1) + '…' : line
}

export function displayWords(words: readonly Word[]): string {
  return clip(words.map((word) => (!word.literal ? word.source : /^[\w@%+=:,./-]+$/.test(word.text) ? word.text : `'${word.text.replace(/'/g, `'\\''`)}'`)).join(' '))
}
