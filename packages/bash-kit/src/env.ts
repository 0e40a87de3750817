import { BASH_ERROR, codedError, DEFAULT_SECRET_PATTERNS, secretRules } from '@deepseek-ai/dsh-bash'

/** Variables every command gets, so that nothing waits for a person or paints the output. */
export const NON_INTERACTIVE_ENV: Readonly<Record<string, string>> = Object.freeze({
  NO_COLOR: '1',
  TERM: 'dumb',
  PAGER: 'cat',
  GIT_PAGER: 'cat',
  GIT_TERMINAL_PROMPT: '0',
  GIT_EDITOR: 'true',
  DEBIAN_FRONTEND: 'noninteractive',
})

export { DEFAULT_SECRET_PATTERNS, SECRET_PATTERN_SYNTAX, secretRules } from '@deepseek-ai/dsh-bash'

// The executors' own control variables, set on a command by the executor itself.

/** The per-command marker every descendant inherits, so that escapees are found through /proc. */
export const MARKER_VARIABLE = 'DSH_BASH_TASK'
/** The cgroup the command's shell joins before it runs anything. */
export const CGROUP_VARIABLE = 'DSH_BASH_CGROUP'
/** A trusted caller's BASH_ENV, carried past the cgroup prelude, which sources it after joining. */
export const BASH_ENV_NEXT_VARIABLE = 'DSH_BASH_ENV_NEXT'

/**
 * Variables never inherited: `BASH_ENV` would make every `bash -c` source a file (a profile by the
 * back door, defeating `--noprofile --norc`), and the executor's own markers must not leak in from
 * a parent dsh-bash process.
 */
const NEVER_INHERITED = new Set(['BASH_ENV', 'ENV', MARKER_VARIABLE, CGROUP_VARIABLE, BASH_ENV_NEXT_VARIABLE])

export interface EnvironmentOptions {
  /** Secret variables to drop: globs over the whole name and `!NAME` exemptions (DEFAULT_SECRET_PATTERNS). */
  secretPatterns?: readonly string[]
  /** A trusted caller's variables: they win over everything. */
  overrides?: Readonly<Record<string, string>>
}

/** Returns true when a variable name looks like a secret under the given patterns. */
export function looksSecret(name: string, patterns: readonly string[] = DEFAULT_SECRET_PATTERNS): boolean {
  const { globs, keep } = secretRules(patterns)
  return !keep.has(name) && globs.some((glob) => glob.test(name))
}

/**
 * The environment of a command: the base environment minus secret-looking names, plus the
 * non-interactive defaults, plus the trusted caller's overrides.
 */
export function buildEnvironment(base: NodeJS.ProcessEnv, options: EnvironmentOptions = {}): Record<string, string> {
  const { globs, keep } = secretRules(options.secretPatterns ?? DEFAULT_SECRET_PATTERNS)
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(base)) {
    if (value === undefined || NEVER_INHERITED.has(name)) continue
    if (!keep.has(name) && globs.some((glob) => glob.test(name))) continue
    env[name] = value
  }
  Object.assign(env, NON_INTERACTIVE_ENV)
  if (options.overrides) {
    for (const [name, value] of Object.entries(options.overrides)) {
      if (typeof value !== 'string') throw codedError(BASH_ERROR.invalidRequest, `env.${name} must be a string`)
      env[name] = value
    }
  }
  return env
}
