import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { decide } from '../src/index.js'
import { oraclePolicy, violations } from './oracle/judge.js'
import { oracleUnavailable, runLines } from './oracle/sandbox.js'

/**
 * A grammar-based generator: random lines composed from bash's constructs (allowed and denied
 * programs, builtins that change the shell, every kind of word, expansion, redirection, compound
 * command and heredoc), many of them harmful only through a hostile environment value
 * (HOSTILE_ENV: `$x` is `a[$(touch pwned-x)]`, `$op` is `-v`…). Each line the policy allows is run
 * by real bash under the oracle; any harm is a policy error, printed to be added to the corpus.
 *
 * In `npm test`: a fixed seed and a bounded count. DSH_POLICY_GENERATOR_RUNS=N (and
 * DSH_POLICY_GENERATOR_SEED=S) for a long run.
 */
const unavailable = oracleUnavailable()
if (unavailable) console.log(`[bash-policy generator] skipped: ${unavailable}`)

const RUNS = Number(process.env.DSH_POLICY_GENERATOR_RUNS ?? 1500)
const SEED = Number(process.env.DSH_POLICY_GENERATOR_SEED ?? 20261202)

/** Names the subset holds (most lines should be allowed, or the oracle learns nothing) and names it must refuse. */
const names = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(
    'echo', 'ls', 'cat', 'printf', 'grep', 'wc', 'head', 'tail', 'sort', 'uniq', 'cut', 'tr', 'find', 'sed', 'awk', 'git status',
    'git log', 'git diff', 'test', '[', 'cd', 'set', 'type', 'command', 'xargs', 'true', 'pwd', 'stat', 'diff', 'basename', 'timeout 5', 'env') },
  { weight: 1, arbitrary: fc.constantFrom(
    'touch', 'rm', 'declare', 'read', 'printf -v', 'let', 'hash', 'alias', 'shopt', 'export', 'unset', 'eval', 'source', 'trap',
    'enable', 'local', 'getopts', 'mapfile', 'exec', 'builtin', 'nice', 'bash -c', 'sh -c', 'time', 'coproc', 'command read', './ls', 'evilbin/cat') },
)

/** Words of the subset, many of them hostile through the environment (`$x`, `$op`, `$f`…) or quoted payloads. */
const safeWord = fc.constantFrom(
  'a.txt', 'notes.txt', 'm', 'src', '.', '-v', '-n', '-R', '-e', '-o', '-i', '-exec', '-delete', '-fprint', '--pre=touch', '--output=m',
  '-x', '1', 'x', 'a', 'b', 'N', 'PATH', 'HOME', '{}', '\\;', '+', '=', '!=', '-eq', '!', ']', '*', '?', '[a]', '*.txt', '{a,b}', '{1..2}',
  '~', '~/m', "'$(touch m)'", "'a[$(touch m)]'", '"a[\\$(touch m)]"', "$'a[\\x24(touch m)]'", "$'\\x24(touch m)'", "'`touch m`'",
  '"$x"', '"${x}"', '$x', '${x}', '"$b"', '$b', '"$op"', '$op', '"$fmt"', '$N', '"$N"', '$f', '"$f"', '$OPT', '$FOO', '$GLOB',
  '"$HOME"', '$((1+1))', '\\$(touch m)', "'w m'", "'1e touch m'", "'BEGIN{system(\"touch m\")}'", "'s/a/b/w m'",
  '--compress-program=touch', 'core.pager=touch', '-c', "'touch m'", 'a[x]', "'a[$(touch m)]=1'", 'x=1', 'expand_aliases',
  'ls=touch', '#', '#x', 'a#b', '\\\\', '-print', '-name', '-type', 'f', '-l', '-r', '--', '-s', "'%s'", '%d', "'-v'",
)
/** Words outside the subset. */
const edgeWord = fc.constantFrom(
  '$1', '"$@"', '$BASH_COMMAND', '"${x:-$(touch m)}"', '"${q:-\'$(touch m)\'}"', '${x:N}', '$((x))', '$((N))', '$[x]', '$(touch m)',
  '`touch m`', '<(touch m)', '"$ b"', 'BASH_CMDS[ls]=/usr/bin/touch', '\\', '"$((x))"', '${!x}', '${x@P}', "$\"x\"",
)
const word = fc.oneof({ weight: 8, arbitrary: safeWord }, { weight: 1, arbitrary: edgeWord })

const safeRedirect = fc.constantFrom(
  '{a[x]}>/dev/null', '{fd}>/dev/null', '{a[N]}<a.txt', '>/dev/null', '2>/dev/null', '2>&1', '>&2', '1>&2', '<a.txt', '< a.txt', '<notes.txt', "<<<'x'", '<<<"$x"', '>/dev/stderr', '&>/dev/null',
  '<m',
)
const edgeRedirect = fc.constantFrom(
  '>m', '>>m', '2>m', '&>m', '>|m', '>&3', '2>&-', '<$f', '<"$f"', '</dev/tcp/127.0.0.1/9', '</dev/udp/127.0.0.1/9', '<>m', '3<a.txt',
  '<&0', '1<&0', '<<<$(touch m)', '<"$HOME"', '>$HOME/m', '>~/m', '>/dev/./null', '>"m"', ">'/dev/null'", '>/dev/nul[l]',
)
const redirect = fc.oneof({ weight: 4, arbitrary: safeRedirect }, { weight: 1, arbitrary: edgeRedirect })

const prefix = fc.oneof(
  { weight: 12, arbitrary: fc.constant('') },
  { weight: 1, arbitrary: fc.constantFrom('x=1 ', "x=$'a[\\x24(touch m)]' ", 'PATH=./evilbin:$PATH ', 'BASH_CMDS[ls]=/usr/bin/touch ', 'HOME=. ', 'IFS=t ') },
)

const simple = fc
  .tuple(prefix, names, fc.array(word, { maxLength: 4 }), fc.array(redirect, { maxLength: 2 }))
  .map(([pre, name, args, redirects]) => [pre + name, ...args, ...redirects].join(' '))

const compound = fc
  .tuple(
    fc.constantFrom('[[ $x ]]', '[[ -v $x ]]', '[[ $x -eq 1 ]]', '(( x ))', '(( N ))', '[ a > m ]', '[ "$x" ]', '[ $op "$b" ]', '[ -f a.txt ]',
      '[ "$op" "$b" ]', '[ ! "$op" "$b" ]', '[ -n "$x" ]', '[ "$x" = "$b" ]', '[ "$x" -eq 1 ]', '[ a \\> m ]',
      '{ ls; }', '( ls )', 'f() { ls; }', 'if true; then ls; fi', 'case x in x) ls;; esac', 'for i in 1; do ls; done', 'ls &', '! ls',
      'x=$b', 'a=([$x]=1)', 'echo $((x))', 'echo ${y:x}', 'echo "$(ls)"', 'echo "$(>m)"', 'ls | tee m', 'time ls'),
    fc.constantFrom('', '', '>m', '2>&1', '>/dev/null', '2>>m'),
  )
  .map(([body, redirect]) => `${body} ${redirect}`.trim())

const command = fc.oneof({ weight: 8, arbitrary: simple }, { weight: 1, arbitrary: compound })

const pipeline = fc.array(command, { minLength: 1, maxLength: 3 }).map((commands) => commands.join(' | '))

const heredoc = fc
  .tuple(
    fc.constantFrom('cat', 'grep x', 'wc -l', 'bash', 'sort'),
    fc.constantFrom("'EOF'", '"EOF"', '\\EOF', 'EOF', "-'EOF'", "'E O'"),
    fc.constantFrom('x', '$(touch m)', '`touch m`', '${x:-$(touch m)}', 'E\\\nOF\ntouch m', 'EOF \ntouch m', ' EOF\ntouch m', '\tEOF\ntouch m', 'touch m'),
  )
  .map(([cmd, delimiter, body]) => `${cmd} <<${delimiter}\n${body}\nEOF`)

/**
 * Lines made only of subset pieces (allowed names, subset words and redirections, quoted heredocs):
 * most are allowed, so the oracle really runs the subset with hostile values. Half the lines.
 */
const safeNames = fc.constantFrom(
  'echo', 'ls', 'cat', 'printf', 'grep', 'wc', 'head', 'tail', 'sort', 'uniq', 'cut', 'tr', 'find', 'sed', 'awk', 'git status',
  'git log', 'git diff', 'test', '[', 'cd', 'type', 'command', 'xargs', 'true', 'pwd', 'stat', 'diff', 'basename', 'timeout 5',
)
const safeCommand = fc
  .tuple(safeNames, fc.array(safeWord, { maxLength: 4 }), fc.array(safeRedirect, { maxLength: 2 }))
  .map(([name, args, redirects]) => (name === '[' ? ['[', ...args, ']', ...redirects] : [name, ...args, ...redirects]).join(' '))
const safeHeredoc = fc
  .tuple(
    fc.constantFrom('cat', 'grep x', 'wc -l', 'sort'),
    fc.constantFrom("'EOF'", '"EOF"', '\\EOF', "-'EOF'"),
    fc.constantFrom('x', '$(touch m)', '`touch m`', '${x:-$(touch m)}', 'a # b', "it's", '"$x"', 'E\\\nOF\ntouch m', 'EOF \ntouch m', ' EOF\ntouch m', '\tEOF\ntouch m'),
  )
  .map(([cmd, delimiter, body]) => `${cmd} <<${delimiter}\n${body}\nEOF`)
const safeLine = fc
  .tuple(
    fc.array(fc.tuple(fc.array(safeCommand, { minLength: 1, maxLength: 3 }), fc.constantFrom('; ', ' && ', ' || ', '\n', ' # x\n')), { maxLength: 2 }),
    fc.array(safeCommand, { minLength: 1, maxLength: 3 }),
    fc.oneof({ weight: 4, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: safeHeredoc }),
  )
  .map(([head, last, doc]) => head.map(([p, sep]) => p.join(' | ') + sep).join('') + last.join(' | ') + (doc ? `\n${doc}` : ''))

const hostileLine = fc
  .tuple(
    fc.array(fc.tuple(pipeline, fc.constantFrom('; ', ' && ', ' || ', '\n', '; ', ' && ', ' & ')), { minLength: 0, maxLength: 2 }),
    pipeline,
    fc.option(heredoc, { freq: 5 }),
  )
  .map(([head, last, doc]) => head.map(([p, sep]) => p + sep).join('') + last + (doc ? `\n${doc}` : ''))

const line = fc.oneof(hostileLine, safeLine)

describe.skipIf(unavailable)('the generator (random lines through the oracle)', () => {
  it(`finds no allowed line that does harm (${RUNS} lines, seed ${SEED})`, async () => {
    const lines = [...new Set(fc.sample(line, { seed: SEED, numRuns: RUNS }))]
    const decisions = await Promise.all(lines.map((text) => decide(oraclePolicy, text)))
    const allowed = lines.filter((_text, i) => decisions[i].kind === 'allow')
    const started = performance.now()
    const traces = await runLines(allowed)
    const seconds = ((performance.now() - started) / 1000).toFixed(1)
    const caught = allowed
      .map((text, i) => ({ text, found: traces[i].started ? violations(traces[i]) : ['the oracle did not run it'] }))
      .filter(({ found }) => found.length)
      .map(({ text, found }) => `${JSON.stringify(text)}: ${found.join('; ')}`)
    console.log(`[bash-policy generator] ${lines.length} distinct lines decided, ${allowed.length} allowed and run under strace in ${seconds} s`)
    if (caught.length) console.log(`[bash-policy generator] add to the corpus:\n${caught.join('\n')}`)
    expect(caught).toEqual([])
    // The generator must reach the subset at all, or it proves nothing.
    expect(allowed.length).toBeGreaterThan(RUNS / 10)
  }, 900_000)
})
