/**
 * @deepseek-ai/dsh-bash-policy — `BashPolicy`: allow, ask or deny each bash call by the commands in it.
 *
 * Flow at a glance: `BashPolicy` (plugin.ts) is a `tools/pre-execute` listener; for a bash call it
 * runs `decide(policy, command)` (decide.ts) → the line is parsed with tree-sitter-bash (parser.ts)
 * → every command it may run is extracted (extract.ts: words unquoted by unquote.ts, wrappers such
 * as `env`/`xargs`/`sh -c` opened by wrappers.ts, redirects.ts, environment.ts; programs that run
 * other programs read by awk.ts, sed.ts, tar.ts, pager.ts, git-options.ts, options.ts, commands.ts)
 * → each is matched against the rules (match.ts): `deny` if any command is denied, else `ask` if
 * any needs approval or anything could not be read with certainty (a line outside the safe subset,
 * subset.ts; a double-byte locale trap, locale.ts), else `allow`. Policies come from policy-file.ts
 * (JSON/YAML, checked); coded errors: errors.ts.
 */
export type { DecideOptions, Decision, DecisionKind, Policy } from './types.js'
export { decide, messages } from './decide.js'
export { parsePolicy, loadPolicyFile, definePolicy, policySchema, PolicyError, POLICY_DEFAULTS, type PolicyInput } from './policy-file.js'
export { compilePattern, matchPattern, type Pattern, type MatchResult } from './match.js'
export { extract, type Finding, type CommandFinding, MAX_NESTING } from './extract.js'
export { loadParser } from './parser.js'
export { BashPolicy, type BashPolicyConfig } from './plugin.js'
export { POLICY_ERROR, isPolicyError, type PolicyErrorCode } from './errors.js'
