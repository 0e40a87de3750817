// The one list of secret variable names every executor removes (the kit's buildEnvironment, the
// far-side agent of containers, pods and SSH hosts): here, in the seam, so that the CLI's help can
// show it without loading an executor.

/**
 * Names of variables that hold secrets, as globs over the whole name (`*` is any run of characters,
 * case-insensitive): whole name parts, so `GITHUB_TOKEN` and `OPENAI_API_KEY` go while `MONKEY`,
 * `KEYBOARD` and `TOKENIZERS_PARALLELISM` stay. An entry `!NAME` keeps that exact variable whatever
 * the globs say (the CLI's `--keep-env NAME`). Every executor applies the same list where the command
 * starts: here (buildEnvironment) and in the far-side agent of containers, pods and SSH hosts
 * (bash-agent native/secret.c, which gets the list on its command line).
 */
export const DEFAULT_SECRET_PATTERNS: readonly string[] = Object.freeze([
  '*_TOKEN',
  '*_SECRET',
  '*_KEY',
  '*PASSWORD*',
  '*_PASSWD',
  '*_APIKEY',
  '*_ACCESS_KEY_ID',
  '*_CREDENTIALS',
  'TOKEN',
  'SECRET',
  'APIKEY',
  'GITHUB_PAT',
])

/** What an entry of the list may be: a glob of name characters and `*`, or `!NAME`. */
export const SECRET_PATTERN_SYNTAX = /^(?:[A-Za-z0-9_*]+|![A-Za-z_][A-Za-z0-9_]*)$/

/** Splits the list into the globs (as anchored, case-insensitive expressions) and the names kept. */
export function secretRules(patterns: readonly string[]): { globs: RegExp[]; keep: Set<string> } {
  const keep = new Set(patterns.filter((p) => p.startsWith('!')).map((p) => p.slice(1)))
  const globs = patterns
    .filter((p) => p !== '' && !p.startsWith('!'))
    .map((p) => new RegExp(`^${p.split('*').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`, 'i'))
  return { globs, keep }
}
