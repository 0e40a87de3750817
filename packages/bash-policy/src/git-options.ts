import type { Word } from './unquote.js'

/**
 * Global options of git (before the subcommand) that change neither what git runs nor what it
 * writes: they turn the pager off, take no lock, or say how pathspecs and replace refs are read.
 * `-P`/`--no-pager` only removes a program git would otherwise start.
 *
 * `-C DIR` is here too: git changes to DIR first, exactly as `cd DIR && git …` or the bash tool's
 * `workdir` would (which repository's configuration git obeys was never the policy's to see; see
 * the README's known limits). Not here: `-c`, `--config-env`, `--exec-path=` (they choose what
 * runs), `-p`/`--paginate` (it starts the pager), `--git-dir`, `--work-tree`, `--bare`,
 * `--namespace`, `--attr-source` (a repository or attributes no directory would pick).
 */
const HARMLESS = new Set([
  '-P', '--no-pager', '--no-optional-locks', '--no-replace-objects',
  '--literal-pathspecs', '--glob-pathspecs', '--noglob-pathspecs', '--icase-pathspecs',
])

/**
 * `git` with its harmless global options left out (`git --no-pager log -3` → `git log -3`), or
 * undefined when there are none. Only literal words count: a run-time word ends the options (and
 * the git inspector asks about it).
 */
export function gitWithoutGlobalOptions(words: readonly Word[]): Word[] | undefined {
  let i = 1
  while (i < words.length && words[i].literal && !words[i].glob) {
    if (HARMLESS.has(words[i].text)) i++
    else if (words[i].text === '-C' && words[i + 1]?.literal && !words[i + 1].glob) i += 2
    else break
  }
  return i === 1 ? undefined : [words[0], ...words.slice(i)]
}
