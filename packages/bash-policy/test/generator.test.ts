import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { decide } from '../src/index.js'
import { oraclePolicy, violations } from './oracle/judge.js'
import { oracleUnavailable, runLines } from './oracle/sandbox.js'

/**
 * A grammar-based generator: random lines composed from bash's constructs (allowed and denied
 * programs, builtins that change the shell, every kind of word, expansion, redirection, compound
 * command and heredoc), many of them harmful only through a hostile environment value
 * (HOSTILE_ENV: `$x` is `a[$(touch pwned-x)]`, `$op` is `-v`, `$w` is `5 touch pwned-w`…). The
 * subset half also composes issue 25's constructs: a `cd` first, `for` loops (a loop variable
 * that matters, like PATH=evilbin, now and then), subshells, `$(…)`/`<(…)` in argument position
 * with hostile output (`$(echo -delete)`, `$(echo 5 touch m)`), git's global options, globs behind
 * a literal prefix for rg and find, and `cat - <<'EOF'`. Each line the policy allows is run
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
    'git log', 'git diff', 'test', '[', 'cd', 'set', 'type', 'command', 'xargs', 'true', 'pwd', 'stat', 'diff', 'basename', 'timeout 5', 'env',
    'git --no-pager log', 'git -C src status', 'git -P diff', 'rg x', 'cat -', 'timeout $w ls', 'env -u $w ls') },
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
/**
 * Subset words of issue 25: globs behind a literal prefix (the work directory has src/-delete and
 * src/--pre=touch), and substitutions whose output is hostile: option-like, split into a command,
 * or text holding `$(`.
 */
const issue25Word = fc.constantFrom(
  'src/*', './*', '.*', 'src/*.ts', '$w', '"$u"', '$(echo -delete)', '"$(echo -v)"', '$(echo --pre=touch m)', '$(echo 5 touch m)',
  '$(echo -i)', '"$(echo --output=m)"', '$(printf %s -c)', '$(cat notes.txt)', '"$(cat notes.txt)"', '<(echo x)', '<(cat a.txt)',
  'x$(echo -v)', '"$(pwd)/src"', '$(ls src)', '"$f"', '$f', 'evilbin', '$PWD/evilbin',
)
/** Words outside the subset. */
const edgeWord = fc.constantFrom(
  '$1', '"$@"', '$BASH_COMMAND', '"${x:-$(touch m)}"', '"${q:-\'$(touch m)\'}"', '${x:N}', '$((x))', '$((N))', '$[x]', '$(touch m)',
  '`touch m`', '<(touch m)', '"$ b"', 'BASH_CMDS[ls]=/usr/bin/touch', '\\', '"$((x))"', '${!x}', '${x@P}', "$\"x\"",
  '$((mkdir m) )', '>(mkdir m)', '$(mkdir m)', '"$(echo $((x)))"', '$(echo a #)', '$(ls\nmkdir m)', '*', '-*', '~/*', '[-]*',
)
const subsetWord = fc.oneof({ weight: 4, arbitrary: safeWord }, { weight: 1, arbitrary: issue25Word })
const word = fc.oneof({ weight: 8, arbitrary: subsetWord }, { weight: 1, arbitrary: edgeWord })

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
      'for PATH in evilbin; do ls; done', 'for HOME in .; do git status; done', 'for f in -delete; do find . $f; done', '((x) )',
      '(PATH=evilbin; ls)', '(cd evilbin && ./ls)', 'cd evilbin; ./ls', 'for f in a; do ls; done', '(ls)', 'for f in *; do rg x $f; done',
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
const safeNames = fc.oneof(
  { weight: 90, arbitrary: fc.constantFrom(
    'echo', 'ls', 'cat', 'printf', 'grep', 'wc', 'head', 'tail', 'sort', 'uniq', 'cut', 'tr', 'find', 'sed', 'awk', 'git status',
    'git log', 'git diff', 'test', '[', 'cd', 'type', 'command', 'xargs', 'true', 'pwd', 'stat', 'diff', 'basename', 'timeout 5',
    'git --no-pager log', 'git -C src status', 'git -P diff', 'git -C . --no-pager log', 'rg x', 'rg -n x', 'cat -',
    'rg x src/*', 'rg -c x ./*', 'find src/* -maxdepth 0', 'find ./* -maxdepth 1', 'rg -l x .*') },
  // A wrapper given a run-time word of its own (w='5 touch pwned-w', u=-u): must never be allowed.
  { weight: 1, arbitrary: fc.constantFrom('timeout $w ls', 'nice -n $w ls', 'env -u $w ls', 'taskset $w ls', 'timeout $(echo 5 touch m) ls', 'env "$u" ls touch') },
)
const safeCommand = fc
  .tuple(safeNames, fc.array(subsetWord, { maxLength: 4 }), fc.array(safeRedirect, { maxLength: 2 }))
  .map(([name, args, redirects]) => (name === '[' ? ['[', ...args, ']', ...redirects] : [name, ...args, ...redirects]).join(' '))
/** A command for inside a substitution, a loop or a subshell: one line, no heredoc; mostly names that take any argument. */
const innerNames = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('echo', 'ls', 'cat', 'wc', 'head', 'tail', 'grep x', 'stat', 'basename', 'cd', 'cat -', 'rg x', 'git --no-pager log -1') },
  { weight: 1, arbitrary: safeNames },
)
const innerCommand = fc
  .tuple(innerNames, fc.array(subsetWord, { maxLength: 2 }), fc.constantFrom('', '', '', '2>/dev/null', '2>&1', '<a.txt', '< <(ls)'))
  .map(([name, args, redirect]) => (name === '[' ? ['[', ...args, ']', redirect] : [name, ...args, redirect]).join(' ').trim())
const substituted = fc.oneof(
  innerCommand.map((c) => `$(${c})`),
  innerCommand.map((c) => `"$(${c})"`),
  innerCommand.map((c) => `<(${c})`),
  innerCommand.map((c) => `a$(${c})`),
)
/** A subset command whose arguments may hold substitutions. */
const substitutingCommand = fc
  .tuple(safeNames, fc.array(fc.oneof({ weight: 2, arbitrary: subsetWord }, { weight: 1, arbitrary: substituted }), { maxLength: 3 }))
  .map(([name, args]) => (name === '[' ? ['[', ...args, ']'] : [name, ...args]).join(' '))
const body = fc.tuple(fc.array(innerCommand, { minLength: 1, maxLength: 2 }), fc.constantFrom('; ', ' && ', ' || ', '\n', ' | '))
  .map(([commands, sep]) => commands.join(sep))
/** for loops: mostly an ordinary variable and a list of subset words. */
const ordinaryLoop = fc
  .tuple(
    fc.constantFrom('f', 'x', 'i', 'b', 'file'),
    fc.array(fc.oneof({ weight: 3, arbitrary: subsetWord }, { weight: 1, arbitrary: substituted }), { minLength: 1, maxLength: 3 }),
    body,
    fc.constantFrom('; ', '\n'),
  )
  .map(([name, list, inner, sep]) => `for ${name} in ${list.join(' ')}${sep}do ${inner}; done`)
/** A loop variable that matters, set to a value that makes it bite (PATH=evilbin runs evilbin/ls). */
const hostileLoop = fc
  .tuple(
    fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom('PATH evilbin', 'PATH $PWD/evilbin') },
      { weight: 1, arbitrary: fc.constantFrom('HOME .', 'LD_PRELOAD a.txt', 'BASH_CMDS /usr/bin/touch', 'PS4 $y', 'LANG C', 'http_proxy x') },
    ),
    fc.constantFrom('ls', 'cat a.txt', 'grep x a.txt', 'ls m', 'git status'),
  )
  .map(([pair, inner]) => `for ${pair.replace(' ', ' in ')}; do ${inner}; done`)
const loop = fc.oneof({ weight: 3, arbitrary: ordinaryLoop }, { weight: 1, arbitrary: hostileLoop })
const subshell = body.map((inner) => `(${inner})`)
const safeStatement = fc.oneof(
  { weight: 8, arbitrary: safeCommand },
  { weight: 2, arbitrary: substitutingCommand },
  { weight: 2, arbitrary: loop },
  { weight: 1, arbitrary: subshell },
)
/** A `cd` first: the commands after it run elsewhere (CDPATH and OLDPWD are set in the sandbox). */
const cdPrefix = fc.constantFrom('', '', '', '', 'cd src && ', 'cd - ; ', 'cd .. && ', 'cd evilbin && ', 'cd ~ && ', 'cd "$(pwd)" && ', 'cd src; ')
const safeHeredoc = fc
  .tuple(
    fc.constantFrom('cat', 'grep x', 'wc -l', 'sort', 'cat -', 'cat a.txt -', 'wc -l -'),
    fc.constantFrom("'EOF'", '"EOF"', '\\EOF', "-'EOF'"),
    fc.constantFrom('x', '$(touch m)', '`touch m`', '${x:-$(touch m)}', 'a # b', "it's", '"$x"', 'E\\\nOF\ntouch m', 'EOF \ntouch m', ' EOF\ntouch m', '\tEOF\ntouch m'),
  )
  .map(([cmd, delimiter, body]) => `${cmd} <<${delimiter}\n${body}\nEOF`)
const safeLine = fc
  .tuple(
    cdPrefix,
    fc.array(fc.tuple(fc.array(safeStatement, { minLength: 1, maxLength: 3 }), fc.constantFrom('; ', ' && ', ' || ', '\n', ' # x\n')), { maxLength: 1 }),
    fc.array(safeStatement, { minLength: 1, maxLength: 3 }),
    fc.oneof({ weight: 4, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: safeHeredoc }),
  )
  .map(([cd, head, last, doc]) => cd + head.map(([p, sep]) => p.join(' | ') + sep).join('') + last.join(' | ') + (doc ? `\n${doc}` : ''))

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
