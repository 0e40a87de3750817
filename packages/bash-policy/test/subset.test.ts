import { describe, expect, it } from 'vitest'
import { decide, definePolicy } from '../src/index.js'

/** The policy of issue 12: read-only programs allowed, writers denied, the rest asked. */
const policy = definePolicy({
  default: 'ask',
  deny: ['rm *', 'touch *', 'sudo *'],
  allow: ['echo *', 'ls *', 'cat *', 'printf *', 'git status', 'wc *', 'head *', 'grep *', 'true', 'test *', '[ *', 'cd *', 'set *'],
})

/** Allows every command: only the subset, an uncertainty or a deny rule keeps a line from `allow`. */
const everything = definePolicy({ default: 'allow', deny: ['rm *', 'touch *'] })

const ask = async (line: string) => (await decide(policy, line)).kind

describe('the safe subset', () => {
  it.each([
    "grep -c 'a\\[$(' notes.txt",
    "echo 'run $(make) first'",
    "echo 'run `make` first'",
    'echo "$HOME" "${USER}" $PWD',
    'ls -la | grep x | wc -l && echo done || echo failed',
    'cat a.txt 2>&1 | head -5',
    'ls nope 2>/dev/null >/dev/null; echo $x',
    'echo err >&2',
    'grep x < notes.txt',
    'grep x <<< "some text"',
    "cat <<'EOF'\n$(touch x) `touch y` ${z:-$(touch w)}\nEOF",
    'cat <<"EOF" | grep a\na\nEOF',
    "cat <<-'EOF'\n\thi\n\tEOF",
    'echo *.ts ~/x {a,b} {1..3}',
    "echo $'tab\\there'",
    '[ -f x ] && echo y',
    '[ "$x" = y ] || test -n "$HOME"',
    'set -euo pipefail; ls',
    'echo a # $(touch x)',
    'ls \\\n  -la',
    'grep "café" notes.txt',
    // issue 25: cd, loops, subshells, substitutions in argument position, `cat -` before a heredoc
    'cd src && ls',
    'cd - 2>/dev/null && ls',
    'for f in src/*.js; do wc -l "$f"; done',
    'for f in a b\ndo\n  cat "$f"\ndone | head',
    'for i in {1..3} $x "$(ls)"; do echo "$i"; done',
    'ls "$(echo .)"',
    'echo "root: $(ls)/x" x$(echo y)z $(ls \\#x)',
    '[ -n "$(ls)" ] && echo some',
    'test -z "$(ls)"',
    'cat <(ls) && wc -l < <(ls)',
    '(cd src && ls) | wc -l',
    '( (ls) )',
    "cat - <<'EOF'\nx\nEOF",
    "cat a - 2>/dev/null <<'EOF'\nx\nEOF",
    'grep x <<< "$(ls)"',
  ])('allows %j', async (line) => {
    expect(await ask(line)).toBe('allow')
  })

  it.each([
    // arithmetic and subscripts
    ["x=$'a[\\x24(touch /tmp/m)]'; echo $((x))", 'an assignment'],
    ['echo $((x))', 'arithmetic'],
    ['echo ${y:x}', 'expansion'],
    ['(( x ))', 'outside'],
    ["[[ -v $'a[\\x24(touch m)]' ]]", 'outside'],
    ["printf -v $'a[\\x24(touch m)]' 1", 'printf with an option'],
    ["a=([$'\\x24(touch m)']=1)", 'outside'],
    ['echo $[x]', 'outside'],
    ['test -v "$x"', '-v in test'],
    ['[ $op "$x" ]', 'outside'],
    ['[ ! "$a" "$b" ]', 'outside'],
    ['test ! "$a" "$b"', 'could read an operator'],
    ['test $op "$x"', 'unquoted expansion'],
    ['test "$a"$b', 'unquoted expansion'],
    ['printf "$fmt" x', 'computed format'],
    // shell state
    ['BASH_CMDS[ls]=/usr/bin/touch; ls /tmp/m', 'assignment'],
    ["bash -O expand_aliases -c $'BASH_ALIASES[ls]=touch\\nls /tmp/m'", 'outside'],
    ['printf -v PATH %s "$PWD/evilbin:$PATH"; ls', 'printf with an option'],
    ['hash -p /usr/bin/touch ls; ls m', 'outside'],
    ['alias ls=touch', 'the builtin alias'],
    ['shopt -s expand_aliases', 'outside'],
    ['set -o posix', 'set -o'],
    ['source x', 'the builtin source'],
    ['read x', 'the builtin read'],
    ['command read x', 'the builtin read'],
    ['echo $BASH_COMMAND', 'the variable'],
    ['echo "$1"', 'the string'],
    // redirections
    ['[[ x ]] >/tmp/m', 'outside'],
    ['(( 1 )) >/tmp/m', 'outside'],
    ['case x in esac >/tmp/m', 'outside'],
    ['echo "$(>/tmp/m)"', 'outside'],
    ['[ a > b ]', 'outside'],
    ['echo x >&3', 'outside'],
    ['echo x 2>&-', 'the redirection'],
    ['cat <>f', 'outside'],
    ['cat 3<f', 'the redirection'],
    ["printf 'DATA\\n' </dev/tcp/127.0.0.1/9 1<&0", 'outside'],
    ['cat </dev/tcp/127.0.0.1/9', 'the socket'],
    ['cat </dev/udp/127.0.0.1/9', 'the socket'],
    ['cat < $f', 'the input'],
    // heredocs
    ['cat <<EOF\nE\\\nOF\ntouch /tmp/m\nEOF', 'outside'],
    ["cat <<'EOF' \\\n| wc\nx\nEOF", 'outside'],
    ["cat <<'EOF'\nx\nEOF ", 'outside'],
    // quotes inside ${…}
    ['echo "${x:-\'$(touch /tmp/m)\'}"', 'outside'],
    ['echo "$ b"', 'outside'],
    // background, functions, substitutions, nested scripts
    ['ls &', 'background'],
    ['ls() { echo; }', 'outside'],
    ['echo `date`', 'outside'],
    ['cat >(ls)', 'outside'],
    ["bash -c 'ls'", 'a script given as text'],
    ["eval 'ls'", 'outside'],
    ['echo a\rb', 'control character'],
    ['echo a\u00a0b', 'non-ASCII blank'],
    ['echo $_', 'the variable'],
    ['%1', 'the command name'],
    ['echo "é\\"; touch m; \\""', 'non-ASCII character right before'],
    ['FOO=1 ls', 'the assignment'],
    ["ls | echo $((1+1)) | cat $x\nbash <<'EOF'\ntouch m\nEOF", 'outside'],
    ['echo {a[x]}>/dev/null', 'assigns a descriptor'],
    ['echo {BASH_CMDS[ls]}>/dev/null; ls', 'assigns a descriptor'],
    ['coproc ls', 'outside'],
    // issue 25: what stays out around loops, subshells and substitutions
    ['for PATH in evilbin; do ls; done', 'the loop variable PATH'],
    ['for file_name in a; do ls; done', 'the loop variable file_name'],
    ['for LANG in C; do ls; done', 'the loop variable LANG'],
    ['for f in do done; do echo $f; done', 'the reserved word do'],
    ['for f in a\nb; do ls; done', 'outside'],
    ['for f in a; do ls; done >/dev/null', 'outside'],
    ['select f in a; do ls; done', 'outside'],
    ['for ((i=0;i<1;i++)); do ls; done', 'outside'],
    ["for f in a; do cat <<'EOF'\nx\nEOF\ndone", 'a heredoc inside a loop'],
    ['((x) )', 'outside'],
    ['(ls) >/dev/null', 'outside'],
    ['(ls &)', 'background'],
    ['echo `ls`', 'outside'],
    ['echo >(ls)', 'outside'],
    ['echo $((ls) )', 'outside'],
    ['echo $(ls # x)', 'outside'],
    ['echo $(ls\n)', 'a line break inside'],
    ['echo x > $(ls)', 'outside'],
    ['cat < $(ls)', 'outside'],
    ['$(ls) -la', 'the command name $(ls) is computed'],
    ['test $(ls) = x', 'unquoted expansion'],
    ['[ $(ls) = x ]', 'unquoted expansion'],
    ['[ "$(echo -v)" "$b" ]', 'outside'],
    ['test "$(echo -v)" "$b"', 'could read an operator'],
    ['test -n "a$(ls)"', 'unquoted expansion'],
    ['printf "$(ls)"', 'computed format'],
    ['cat -<<\'EOF\'\nx\nEOF', 'outside'],
    // a run-time word among a wrapper's own words moves where its command starts
    ['timeout $w ls', 'the timeout argument $w is computed at run time and could change what it runs'],
    ['nice -n "$x" ls', 'the nice argument "$x" is computed'],
    ['env -u $x ls', 'the env argument $x is computed'],
    ['xargs -n $x ls', 'the xargs argument $x is computed'],
    ['timeout 1* ls', 'the timeout argument 1* is computed'],
  ])('asks for %j (%s)', async (line, why) => {
    // Under a policy that allows every command, only the subset (or an uncertainty) can ask.
    const decision = await decide(everything, line)
    expect(decision.kind).not.toBe('allow')
    if (why !== 'outside') expect(decision.reason).toContain(why)
    expect((await decide(policy, line)).kind).not.toBe('allow')
  })

  it('matches git rules with and without the harmless global options, and only those', async () => {
    const git = definePolicy({ default: 'ask', deny: ['git push --force *'], allow: ['git log *', 'git status'] })
    for (const line of ['git --no-pager log --oneline -3', 'git -P log -1', 'git -C src status', 'git -C . --no-pager --no-optional-locks log', 'git --literal-pathspecs log -- a']) {
      expect({ line, kind: (await decide(git, line)).kind }).toEqual({ line, kind: 'allow' })
    }
    for (const line of ['git -C x push --force origin', 'git --no-pager push --force origin', 'git -P -C . push --force x']) {
      expect({ line, kind: (await decide(git, line)).kind }).toEqual({ line, kind: 'deny' })
    }
    for (const line of ['git -p log', 'git --paginate log', 'git --git-dir=x log', 'git --work-tree=x status', 'git --bare log', 'git -c core.pager=touch --no-pager log', 'git --no-pager -c core.pager=x log', 'git -C "$d" log', 'git -C src* log']) {
      expect({ line, kind: (await decide(git, line)).kind }).toEqual({ line, kind: 'ask' })
    }
    expect((await decide(git, 'git --no-pager log -3')).reason).toBeUndefined()
    expect((await decide(git, 'git --no-pager diff')).reason).toBe('command needs approval (no rule allows it): git --no-pager diff')
  })

  it('puts back the `-` the grammar drops before a heredoc or a 2> redirection', async () => {
    const dash = definePolicy({ default: 'ask', allow: ['cat -', 'cd -', 'ls'] })
    expect((await decide(dash, "cat - <<'EOF'\nx\nEOF")).kind).toBe('allow')
    expect((await decide(dash, 'cd - 2>/dev/null')).kind).toBe('allow')
    // The grammar hangs the redirection on the whole list or pipeline; the `-` is the last command's.
    expect((await decide(dash, 'ls && cat - 2>/dev/null')).kind).toBe('allow')
    expect((await decide(dash, "ls | cat - <<'EOF'\nx\nEOF")).kind).toBe('allow')
    expect((await decide(dash, 'ls - && cat 2>/dev/null')).kind).toBe('ask')
    expect((await decide(dash, "cat <<'EOF'\nx\nEOF")).kind).toBe('ask')
    expect((await decide(dash, "cat - - <<'EOF'\nx\nEOF")).kind).toBe('ask')
  })

  it('keeps relative command names out of a line with a cd, even under a rule for them', async () => {
    const gradle = definePolicy({ default: 'ask', allow: ['./gradlew *', 'cd *', 'ls *'] })
    expect((await decide(gradle, './gradlew build')).kind).toBe('allow')
    for (const line of ['cd sub && ./gradlew build', './gradlew build; cd ..', 'for d in a b; do ./gradlew x; cd $d; done', '(cd sub) && ./gradlew x', 'command cd sub; ./gradlew x']) {
      const decision = await decide(gradle, line)
      expect({ line, kind: decision.kind }).toEqual({ line, kind: 'ask' })
      expect(decision.reason).toContain('the relative command name ./gradlew in a line with cd')
    }
    expect((await decide(gradle, 'cd sub && ls')).kind).toBe('allow')
  })

  it('lets rg and find take a glob that starts with a plain character, and nothing else', async () => {
    const search = definePolicy({ default: 'ask', allow: ['rg *', 'find *'] })
    for (const line of ['rg x src/*.ts', 'rg x ./*', 'rg x .*', 'find src/* -maxdepth 0', 'find ./* -type d', 'rg x a{b,c}*']) {
      expect({ line, kind: (await decide(search, line)).kind }).toEqual({ line, kind: 'allow' })
    }
    for (const line of ['rg x *', 'rg x ?x', 'rg x [-]*', 'rg x "-"*', 'rg x \\-*', 'rg x {-,}*', 'rg x ~/*', 'find * -maxdepth 0', 'find -*', 'rg x $d', 'find $(ls)']) {
      expect({ line, kind: (await decide(search, line)).kind }).toEqual({ line, kind: 'ask' })
    }
  })

  it('still denies a denied command found inside what is outside the subset', async () => {
    for (const line of ['echo $(touch x)', 'x=$(rm -rf y)', "bash -c 'touch x'", 'ls | (touch x)', 'f() { rm x; }; echo', 'echo $((1 + $(touch x)))']) {
      expect({ line, kind: (await decide(policy, line)).kind }).toEqual({ line, kind: 'deny' })
    }
  })

  it('is ask for a line outside the subset even under default allow', async () => {
    const permissive = definePolicy({ default: 'allow', deny: ['touch *'] })
    expect((await decide(permissive, 'echo $((x))')).kind).toBe('ask')
    expect((await decide(permissive, 'echo $((1+1))')).kind).toBe('allow')
    expect((await decide(permissive, 'ls -la')).kind).toBe('allow')
  })
})
