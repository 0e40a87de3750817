import { compilePattern, definePolicy, matchPattern, type Policy } from '../../src/index.js'
import { WRAPPERS } from '../../src/wrappers.js'
import type { LineTrace } from './trace.js'

/**
 * The oracle's policy: the one of issue 12 (writers and privilege denied, read-only programs
 * allowed, the rest asked), with more read-only programs so that their executing and writing
 * options (sed w, find -delete, awk system(), sort -o, git -c…) are tested too.
 */
export const oraclePolicy: Policy = definePolicy({
  default: 'ask',
  deny: ['rm *', 'touch *', 'sudo *', 'cp *', 'mv *', 'chmod *', 'ln *', 'dd *', 'curl *', 'wget *', 'nc *', 'python3 *', 'perl *'],
  ask: ['git push *'],
  allow: [
    'echo *', 'ls *', 'cat *', 'printf *', 'git status', 'git status *', 'git log *', 'git diff *', 'wc *', 'head *', 'tail *', 'grep *',
    'true', 'false', 'pwd', 'test *', '[ *', 'cd *', 'sort *', 'uniq *', 'cut *', 'tr *', 'find *', 'sed *', 'awk *',
    'basename *', 'dirname *', 'date', 'stat *', 'diff *', 'set *', 'xargs *', 'type *', 'command *', 'tee /dev/null',
    // The program readers of issue 25: every awk a rule `awk *` may stand for, tar, the pagers.
    'gawk *', 'mawk *', 'original-awk *', 'tar *', 'less *', 'more *',
    // Issue 25's subset: rg globs, substitutions that ask git for a path.
    'rg *', 'git rev-parse *',
  ],
})

/** Directories an allowed program name may be executed from: the system's, not the work directory's. */
const SYSTEM_DIRS = ['/usr/bin', '/bin', '/usr/sbin', '/sbin', '/usr/local/bin', '/usr/lib/git-core']

/** Filters tar reads a compressed archive through. */
const DECOMPRESSORS = ['gzip', 'bzip2', 'xz', 'lzip', 'lzma', 'lzop', 'zstd', 'compress', 'uncompress']

const allowPatterns = oraclePolicy.allow.map(compilePattern)

/**
 * git's global options the policy matches rules without (src/git-options.ts), listed again here
 * so that the judge does not take the policy's word for it: if the policy's list held one that
 * makes git run something else (`-p` starts the pager), that program's own exec is uncovered.
 */
function withoutGitGlobals(argv: string[]): string[] {
  let i = 1
  while (i < argv.length) {
    if (['--no-pager', '-P', '--no-optional-locks'].includes(argv[i])) i++
    else if (argv[i] === '-C' && i + 1 < argv.length) i += 2
    else break
  }
  return [argv[0], ...argv.slice(i)]
}

/** Why what bash did is not covered by an `allow` verdict, or an empty list. */
export function violations(trace: LineTrace, policy: Policy = oraclePolicy): string[] {
  const found: string[] = []
  const patterns = policy === oraclePolicy ? allowPatterns : policy.allow.map(compilePattern)
  for (const exec of trace.execs) {
    const slash = exec.path.lastIndexOf('/')
    const dir = exec.path.slice(0, slash)
    const base = exec.path.slice(slash + 1)
    // git runs its own helpers from its exec path; they are git, which the rule already named.
    if (dir === '/usr/lib/git-core') continue
    // tar runs a decompressor as a filter from its standard input to its output (`gzip -d`).
    if (DECOMPRESSORS.includes(base) && exec.argv.length === 2 && exec.argv[1] === '-d') continue
    const argv = base === 'git' ? withoutGitGlobals([base, ...exec.argv.slice(1)]) : [base, ...exec.argv.slice(1)]
    const words = argv.map((text) => ({ text, literal: true, glob: false, source: text }))
    const covered = patterns.some((pattern) => matchPattern(pattern, words, 'allow') === 'yes') || WRAPPERS.get(base)?.transparent === true
    if (!SYSTEM_DIRS.includes(dir)) found.push(`executed ${exec.path} from outside the system directories`)
    else if (!covered) found.push(`executed ${[exec.path, ...exec.argv.slice(1)].join(' ').slice(0, 200)}`)
  }
  for (const write of trace.writes) found.push(`wrote: ${write}`)
  for (const connect of trace.connects) found.push(`connected: ${connect}`)
  return found
}
