import type { Parser } from 'web-tree-sitter'
import { extract, type CommandFinding, type Finding } from './extract.js'
import { compilePattern, matchPattern, type MatchResult, type Pattern } from './match.js'
import { loadParser } from './parser.js'
import type { DecideOptions, Decision, Policy } from './types.js'

/** A rule list indexed by the pattern's first word, so a command only meets rules for its name. */
interface RuleList {
  byName: Map<string, { pattern: Pattern; index: number }[]>
  /** Patterns whose first word has a `*` (or that are just `*`). */
  wild: { pattern: Pattern; index: number }[]
}

interface Compiled {
  deny: RuleList
  ask: RuleList
  allow: RuleList
  interactive: RuleList
}

const compiled = new WeakMap<Policy, Compiled>()

function compile(policy: Policy): Compiled {
  let entry = compiled.get(policy)
  if (!entry) {
    // `?? []`: a policy object made by hand before `interactive` existed still works (and asks).
    entry = { deny: index(policy.deny), ask: index(policy.ask), allow: index(policy.allow), interactive: index(policy.interactive ?? []) }
    compiled.set(policy, entry)
  }
  return entry
}

function index(sources: readonly string[]): RuleList {
  const list: RuleList = { byName: new Map(), wild: [] }
  sources.forEach((source, index) => {
    const pattern = compilePattern(source)
    const first = pattern.words[0]
    if (typeof first !== 'string') list.wild.push({ pattern, index })
    else list.byName.set(first, [...(list.byName.get(first) ?? []), { pattern, index }])
  })
  return list
}

/** The rules that could match a command named `name`, in policy order. */
function candidates(list: RuleList, name: string): Pattern[] {
  const base = name.includes('/') ? name.slice(name.lastIndexOf('/') + 1) : undefined
  const found = [...(list.byName.get(name) ?? []), ...((base && list.byName.get(base)) || []), ...list.wild]
  if (found.length > 1) found.sort((a, b) => a.index - b.index)
  return found.map((entry) => entry.pattern)
}

/** The stable messages; the README lists every one. */
export const messages = {
  deniedByRule: (rule: string, command: string) => `command denied by rule "${rule}": ${command}`,
  deniedByDefault: (command: string) => `command denied (no rule allows it): ${command}`,
  askByRule: (rule: string, command: string) => `command needs approval (rule "${rule}"): ${command}`,
  askMayMatch: (rule: string, command: string) => `command needs approval (may match rule "${rule}"): ${command}`,
  askByDefault: (command: string) => `command needs approval (no rule allows it): ${command}`,
  askRedirect: (target: string, command: string) => `command needs approval (output redirected to ${target}): ${command}`,
  askFlag: (why: string, command: string) => `command needs approval (${why}): ${command}`,
  askInteractive: (command: string) => `command needs approval (interactive: no "interactive" rule allows it): ${command}`,
  uncertain: (why: string) => `command needs approval (could not be parsed with certainty: ${why})`,
  outside: (why: string) => `command needs approval (outside the safe subset: ${why})`,
}

/**
 * Decides a command line under a policy: `deny` if any command in it is denied, else `ask` if any
 * needs approval (or anything could not be read with certainty), else `allow`. With
 * `{interactive: true}` an allowed line also needs an `interactive` rule for each of its commands.
 */
export async function decide(policy: Policy, command: string, options: DecideOptions = {}): Promise<Decision> {
  if (typeof command !== 'string') return { kind: 'ask', reason: messages.uncertain('the command is not a string') }
  // bash cannot receive a NUL in its script; what it would run instead is anybody's guess.
  if (command.includes('\0')) return { kind: 'ask', reason: messages.uncertain('the command contains a NUL character') }
  const bytes = Buffer.byteLength(command, 'utf8')
  if (bytes > policy.maxCommandBytes) {
    return { kind: 'ask', reason: messages.uncertain(`the command is longer than ${policy.maxCommandBytes} bytes (${bytes})`) }
  }
  let parser: Parser
  try {
    parser = await loadParser()
  } catch (error) {
    return { kind: 'ask', reason: messages.uncertain(`the bash parser could not be loaded: ${(error as Error).message}`) }
  }
  return decideParsed(policy, extract(parser, command, policy.maxCommands), options.interactive === true)
}

/**
 * Deny wins; then the first ask in reading order; then, if anything is outside the safe subset,
 * ask for that — whatever `default` says, because only the subset is proven harmless. Every ask is
 * kept (`reasons`): a person approving the line must see each command that needs it, not the first.
 */
function decideParsed(policy: Policy, findings: Finding[], interactive: boolean): Decision {
  const rules = compile(policy)
  let first: Decision | undefined
  const asks: string[] = []
  const outside: string[] = []
  for (const finding of findings) {
    if (finding.kind === 'outside') {
      outside.push(messages.outside(finding.why))
      continue
    }
    let decision = judge(policy, rules, finding)
    if (decision.kind === 'deny') return decision
    // Keystrokes reach every program of an interactive line unchecked: each one, wrappers included
    // (`env -i less` would drop LESSSECURE), needs a rule that says so.
    if (decision.kind === 'allow' && interactive && finding.kind === 'command' && finding.words.length > 0) {
      if (firstMatch(rules.interactive, finding, 'allow').result !== 'yes') {
        decision = { kind: 'ask', reason: messages.askInteractive(finding.display), command: finding.display }
      }
    }
    if (decision.kind === 'ask') {
      first ??= decision
      asks.push(decision.reason!)
    }
  }
  const reasons = [...new Set([...asks, ...outside])]
  if (!reasons.length) return { kind: 'allow' }
  return { ...(first ?? { kind: 'ask', reason: reasons[0] }), reasons }
}

/** The first rule matching any spelling of the command (`git --no-pager log` is also `git log`). */
function firstMatch(list: RuleList, finding: CommandFinding, mode: 'allow' | 'restrict'): { result: MatchResult; rule?: string } {
  let maybe: string | undefined
  for (const words of [finding.words, ...(finding.also ?? [])]) {
    for (const pattern of candidates(list, words[0].text)) {
      const result = matchPattern(pattern, words, mode)
      if (result === 'yes') return { result, rule: pattern.source }
      if (result === 'maybe') maybe ??= pattern.source
    }
  }
  return maybe === undefined ? { result: 'no' } : { result: 'maybe', rule: maybe }
}

function judge(policy: Policy, rules: Compiled, finding: Exclude<Finding, { kind: 'outside' }>): Decision {
  if (finding.kind === 'uncertain') return { kind: 'ask', reason: messages.uncertain(finding.why) }
  const command = finding.display
  if (finding.kind === 'flag') return { kind: 'ask', reason: messages.askFlag(finding.why, command), command }
  if (!finding.words.length) {
    // A bare redirection (`> file`) runs no command but still writes.
    const target = finding.redirects[0]
    return target ? { kind: 'ask', reason: messages.askRedirect(target, command), command } : { kind: 'allow' }
  }
  const deny = firstMatch(rules.deny, finding, 'restrict')
  if (deny.result === 'yes') return { kind: 'deny', reason: messages.deniedByRule(deny.rule!, command), command, rule: deny.rule }
  const allowed = finding.transparent || firstMatch(rules.allow, finding, 'allow').result === 'yes'
  if (!allowed && policy.default === 'deny') return { kind: 'deny', reason: messages.deniedByDefault(command), command }
  if (deny.result === 'maybe') return { kind: 'ask', reason: messages.askMayMatch(deny.rule!, command), command, rule: deny.rule }
  const ask = firstMatch(rules.ask, finding, 'restrict')
  if (ask.result === 'yes') return { kind: 'ask', reason: messages.askByRule(ask.rule!, command), command, rule: ask.rule }
  if (ask.result === 'maybe') return { kind: 'ask', reason: messages.askMayMatch(ask.rule!, command), command, rule: ask.rule }
  if (finding.flags.length) return { kind: 'ask', reason: messages.askFlag(finding.flags[0], command), command }
  if (finding.redirects.length) return { kind: 'ask', reason: messages.askRedirect(finding.redirects[0], command), command }
  if (allowed || policy.default === 'allow') return { kind: 'allow' }
  return { kind: 'ask', reason: messages.askByDefault(command), command }
}
