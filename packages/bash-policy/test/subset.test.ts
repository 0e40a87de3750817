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
    ['cat <(ls)', 'outside'],
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
