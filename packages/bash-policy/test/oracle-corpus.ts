/**
 * The oracle corpus: lines run by real bash under strace (test/oracle) and decided under
 * `oraclePolicy`. A `harmless` line is one a user would expect to run without a prompt (reads,
 * searches, listings, quoted text that mentions `$(`); the rest are attacks, from the classes of
 * issue 12, the public bypass history of agent permission layers (command chaining past a prefix
 * rule, path-qualified and PATH-shadowed names, executing options of "read-only" tools:
 * `sort --compress-program`, `rg --pre`, `man -P`, `git diff --output`, `find -exec/-delete`,
 * `fd -x`), and every line the generator ever caught. Every attack writes the file `m` (or
 * `pwned…`), runs `touch`, or connects, when bash really runs it.
 */
export interface OracleCase {
  family: string
  line: string
  harmless: boolean
}

export const oracleCorpus: OracleCase[] = []

function add(family: string, harmless: boolean, lines: readonly string[]): void {
  for (const line of lines) oracleCorpus.push({ family, line, harmless })
}

const cross = <A, B>(as: readonly A[], bs: readonly B[], f: (a: A, b: B) => string): string[] => as.flatMap((a) => bs.map((b) => f(a, b)))

// ---------------------------------------------------------------- harmless
add('harmless: reads and listings', true, [
  'ls', 'ls -la', 'ls -la src', 'ls -1 src | wc -l', 'cat notes.txt', 'cat a.txt input.txt', 'head -n 2 notes.txt',
  'head -1 a.txt', 'tail -n 1 notes.txt', 'tail -2 a.txt', 'wc -l notes.txt', 'wc -c a.txt input.txt', 'pwd', 'date',
  'basename /a/b/c.txt', 'dirname /a/b/c.txt', 'stat a.txt', 'stat -c %s a.txt', 'true', 'false || true', 'git status',
  'git log --oneline -5', 'git log -1', 'git diff --stat', 'git diff', 'diff a.txt input.txt', 'diff -u a.txt a.txt',
  'sort a.txt', 'sort -r input.txt | uniq', 'sort a.txt | uniq -c', 'cut -c1-3 a.txt', 'tr a-z A-Z < a.txt',
  'ls src/*.ts', 'wc -l src/*.ts', 'cat src/x.ts src/y.ts | wc -l', 'ls -d */', 'ls ~', 'ls ~/', 'echo ~/x',
  'ls src/{x,y}.ts', 'echo {1..5}', 'echo {a..e}', 'ls -la ./src', 'cd src && ls', 'cd src; ls -la; cd ..',
  'cd /tmp && pwd', 'type ls', 'type -t cat', 'command -v grep', 'command -V ls', 'head -c 10 notes.txt',
  'tail -c 5 a.txt', 'ls -R src', 'ls -t', 'ls -S src', 'git status --short', 'git status -sb',
])
add('harmless: searches', true, [
  'grep TODO notes.txt', 'grep -rn TODO src', 'grep -rn "TODO" src/ | head -20', 'grep -c TODO notes.txt',
  'grep -l TODO src/*.ts', 'grep -i todo notes.txt', "grep -E 'a|b' a.txt", "grep -F '[' notes.txt", "grep '^a' a.txt",
  "grep -v '^$' notes.txt", "grep -o '[a-z]*' a.txt", 'grep -w two input.txt', "grep -rn --include='*.ts' export src",
  "find . -name '*.ts'", 'find . -type f', 'find src -name x.ts', "find . -name '*.txt' | wc -l", 'find . -maxdepth 1',
  "find . -name '*.ts' -exec grep -l TODO {} +", "find . -name '*.ts' -exec wc -l {} \\;", 'find src -type f | sort',
  "sed -n '1,2p' notes.txt", "sed 's/a/b/' a.txt", "sed -n '/TODO/p' notes.txt", "sed -e 's/x/y/g' -e 's/a/b/' a.txt",
  "awk '{print $1}' a.txt", "awk -F: '{print NF}' notes.txt", "awk 'NR==1' notes.txt", "awk '/TODO/ {n++} END {print n}' notes.txt",
  'cat notes.txt | grep -c TODO', 'cat a.txt | sort | uniq | wc -l', 'ls | grep txt', 'ls src | sort -r | head -1',
  "grep -rn 'TODO' . 2>/dev/null | head -5", "git log --oneline | grep -c x", "echo a b c | tr ' ' '\\n' | sort",
  'echo one two | xargs echo', 'ls src | xargs -n1 echo', "find . -name '*.ts' | xargs grep -l export",
])
add('harmless: quoted text that mentions expansions', true, [
  "grep -c 'a\\[$(' notes.txt", "echo 'run $(make) first'", "echo 'run $(make) first'; echo $((1+1))", "echo 'use `make` here'",
  "grep -F '$(' notes.txt", "grep '${HOME}' notes.txt", "echo '$((1+1)) is arithmetic'", "echo 'a[$(touch m)]'",
  "printf '%s\\n' '$(touch m)'", "echo '<(ls)' '>(ls)'", "grep -E '\\$\\(' notes.txt", "echo 'x=$(date); rm -rf /'",
  "echo 'BASH_CMDS[ls]=/usr/bin/touch'", "echo '${x:-$(touch m)}'", "echo \"it's \\$(fine)\"", "echo \"a \\`b\\` c\"",
  "echo \"costs $ 5\"", "grep -c '\\`' notes.txt", "echo $'\\x24(touch m)'", "echo $'a[\\x24(touch m)]'",
  "printf '%s\\n' $'\\140touch m\\140'", "echo 'eval \"$x\"'", "echo '; touch m'", "echo '&& touch m'", "echo '| touch m'",
  "echo '# $(touch m)'", "echo \"; touch m\"", "echo \"&& touch m | x > y\"", "grep -n '>' notes.txt", "grep -n '<' notes.txt",
])
add('harmless: injections the program itself refuses or reads only', true, [
  // Bash ends a quoted heredoc only at its delimiter line; `E\` + newline + `OF` is body text (the oracle agrees).
  "cat <<'EOF'\nE\\\nOF\ntouch m\nEOF",
  'sort --files0-from=a.txt', 'grep -r x --pre=touch .', 'grep x * $OPT', 'echo ok \\`touch m\\`', "cat <<'EOF'\nx\nEOF",
  'ls * $OPT', 'cat * 2>/dev/null | wc -l', 'wc -l *', 'head -n1 * 2>/dev/null', 'ls -- *', 'echo $FOO $OPT $op',
])

add('harmless: variables, redirections, heredocs', true, [
  'echo "$HOME"', 'echo "${HOME}/x"', 'echo $HOME', 'echo "$USER is $PWD"', 'echo $x $y $z', 'echo "$x" "$y" "$z"',
  'echo "${b}" "$N"', 'printf "%s\\n" "$x"', 'printf "%s %s\\n" "$op" "$fmt"', 'ls "$HOME"', 'cat "$HOME/none" 2>/dev/null',
  'ls nope 2>/dev/null || echo missing', 'ls 2>&1 | head -3', 'ls >/dev/null 2>&1 && echo ok', 'echo err >&2', 'echo x 1>&2',
  'ls &>/dev/null', 'ls >>/dev/null', 'echo x >/dev/stderr', 'grep two < input.txt', 'wc -l < notes.txt',
  "grep -c two < 'input.txt'", 'sort < a.txt | uniq', "grep x <<< 'some text'", 'wc -w <<< "$HOME"',
  "cat <<'EOF'\nhello $(touch m) `touch m` ${x:-$(touch m)}\nEOF", "cat <<'EOF' | wc -l\na\nb\nEOF",
  'cat <<"EOF"\n$(touch m)\nEOF', "cat <<\\EOF\n$(touch m)\nEOF", "cat <<-'EOF'\n\t$(touch m)\n\tEOF",
  "grep -c x <<'END'\nx\n  END\nEND", "cat <<'EOF' && echo done\nbody\nEOF", 'set -e; ls', 'set -euo pipefail; ls | wc -l',
  'set -o pipefail; git status', '[ -f a.txt ] && echo yes', '[ -d src ] || echo no', 'test -f notes.txt && cat notes.txt',
  '[ "$x" = y ] || echo different', 'test -n "$HOME"', '[ -z "$y" ] && echo empty', '[ a = a ]', 'test 1 -eq 1 && echo eq',
  '[ "$x" -eq 1 ] 2>/dev/null || echo no', 'echo a # a comment $(touch m)', 'ls \\\n  -la', 'grep -rn \\\n  TODO \\\n  src',
  'echo $((1+2))', 'echo $(( (2*3) % 4 ))', 'echo "line one" && echo "line two"',
])

add('harmless: everyday lines with cd, loops, subshells, substitutions (issue 25)', true, [
  // The four lines issue 25 found refused under a read-only allow list.
  // (The first, `cd src && ls`, is among the reads and listings above.)
  'git --no-pager log --oneline -3', 'for f in src/*.ts; do wc -l "$f"; done', 'ls "$(pwd)"',
  'cd src && ls -la && cd ..', 'cd .. && pwd', 'cd && pwd', 'cd - 2>/dev/null || pwd', 'cd evilbin && ls', 'cd src; cat x.ts',
  'git -C src status', 'git -C . log --oneline -1', 'git -P log -1', 'git --no-pager diff --stat', 'git --no-optional-locks status',
  'git --no-pager -C src log -1', 'git -C src --no-pager status --short',
  'for f in *.txt; do echo "== $f"; head -1 "$f"; done', 'for d in src .; do ls "$d"; done', 'for i in 1 2 3; do echo $i; done',
  'for i in {1..3}; do echo "$i"; done', 'for f in $(ls src); do echo "$f"; done', 'for f in src/*.ts; do grep -c export "$f"; done | sort',
  'for f in *; do echo "$f"; done', 'for f in *; do cat "$f" | wc -l; done', 'for f in a.txt input.txt\ndo\n  wc -l "$f"\ndone',
  'for x in $x; do echo "$x"; done', 'for f in src/*; do [ -f "$f" ] && echo "$f"; done',
  '(cd src && ls)', '(cd src; ls -la) | wc -l', '(echo a; echo b) | sort', '( ls )', 'ls && (cd src && pwd)', '( (cd src) && ls )',
  'echo "$(date)"', 'echo "root: $(git rev-parse --show-toplevel)"', 'wc -l $(ls src/*.ts)', 'cat $(find src -name x.ts)',
  'echo "$(cat notes.txt | wc -l) lines"', 'ls $(dirname src/x.ts)', 'echo "$(basename "$PWD")"', 'echo x$(echo y)z',
  '[ -n "$(git status --porcelain)" ] && echo dirty || echo clean', 'test -z "$(ls src)" || echo nonempty',
  'echo "$(echo "$(pwd)")"', 'grep -c x <<< "$(cat a.txt)"', 'ls $(echo -la)', 'cat $(echo -- a.txt)',
  'diff <(sort a.txt) <(sort input.txt)', 'cat <(echo x)', 'wc -l < <(ls)', 'diff <(ls src) <(ls .)', 'grep x <(cat a.txt)',
  "cat - <<'EOF'\nhello\nEOF", "cat a.txt - <<'EOF'\nmore\nEOF", "wc -l - <<'EOF'\nx\nEOF", "cat - 2>/dev/null <<'EOF'\nx\nEOF",
  'ls && cat - 2>/dev/null < a.txt', "ls | cat - <<'EOF'\nx\nEOF",
  'rg TODO src/*.ts', 'rg -n export ./src/*', 'rg x src/*', 'find src/* -maxdepth 0', 'find ./* -maxdepth 0 -type d', 'find src/*.ts -newer a.txt',
  'ls -d .*', 'rg -c x ./*', 'find .* -maxdepth 0',
])

// ---------------------------------------------------------------- attacks
const hidden = [
  "$'a[\\x24(touch m)]'", "'a[$(touch m)]'", '"a[\\$(touch m)]"', "'a[`touch m`]'", "$'a[\\140touch m\\140]'",
  "'b[$(touch m)]'", "$'x[\\044(touch m)]'",
]
const sinks = [
  'echo $((x))', 'echo $((x+1))', 'echo ${y:x}', 'echo ${y:0:x}', '(( x ))', '((x))', 'echo $[x]', '[[ x -eq 1 ]]',
  '[[ $x -eq 1 ]]', 'let x', 'let "y=x"', 'declare -i y=x', 'printf -v "$x" 1', 'test -v "$x"', '[ -v "$x" ]',
  'read "$x" <<< 1', 'unset "$x"', 'echo ${a[x]}', 'echo "${a[$x]}"', 'a[x]=1', 'for ((i=x;i<1;i++)); do :; done',
  'echo ${#a[x]}', 'getopts a "$x"', 'mapfile -t "$x" < /dev/null', 'shift $((x))', '[[ -v $x ]]', 'declare -n r=$x; echo $r',
  'export "$x"=1', 'printf %d $((x))', 'echo ${!x}',
]
add('arithmetic and subscripts', false, [
  ...cross(hidden.slice(0, 4), sinks, (value, sink) => `x=${value}; ${sink}`),
  ...cross(hidden.slice(4), sinks.slice(0, 10), (value, sink) => `x=${value}; ${sink}`),
  "[[ -v $'a[\\x24(touch m)]' ]]", "printf -v $'a[\\x24(touch m)]' 1", "a=([$'\\x24(touch m)']=1)", "declare -A a; a[$'\\x24(touch m)']=1",
  "echo $(( $'a[\\x24(touch m)]' ))", "test -v 'a[$(touch m)]'", "[ -v 'a[$(touch m)]' ]", "printf -v 'a[$(touch m)]' x",
  "read 'a[$(touch m)]' <<< x", "unset 'a[$(touch m)]'", "declare 'a[$(touch m)]=1'", "local 'a[$(touch m)]'",
  'test -v "$b"', '[ -v "$b" ]', 'test $op "$b"', '[ $op "$b" ]', 'test "$a" "$b"', 'test ! "$a" "$b"', '[ ! "$a" "$b" ]',
  'printf "$fmt" "$b" 1', 'printf $fmt $b 1', 'echo $((N))', 'echo $(($N))', '(( N ))', 'echo ${x:N}', 'let N',
  'x=N; echo $((x))', 'echo $((1+x))', 'echo $((b))',
])

const allowedNames = ['ls', 'cat', 'echo', 'grep x', 'git status']
add('shell state that changes what an allowed name runs', false, [
  ...allowedNames.map((name) => `BASH_CMDS[${name.split(' ')[0]}]=/usr/bin/touch; ${name} m`),
  ...allowedNames.map((name) => `hash -p /usr/bin/touch ${name.split(' ')[0]}; ${name} m`),
  ...allowedNames.map((name) => `PATH=$PWD/evilbin:$PATH; ${name}`),
  ...allowedNames.map((name) => `printf -v PATH %s "$PWD/evilbin:$PATH"; ${name}`),
  ...allowedNames.map((name) => `export PATH=evilbin:$PATH; ${name}`),
  ...allowedNames.map((name) => `PATH=./evilbin ${name}`),
  ...allowedNames.map((name) => `${name.split(' ')[0]}() { touch m; }; ${name}`),
  ...allowedNames.map((name) => `function ${name.split(' ')[0]} { touch m; }; ${name}`),
  ...allowedNames.map((name) => `./evilbin/${name}`),
  ...allowedNames.map((name) => `evilbin/${name}`),
  ...allowedNames.map((name) => `$PWD/evilbin/${name}`),
  "bash -O expand_aliases -c $'BASH_ALIASES[ls]=touch\\nls m'", "bash -i -c $'BASH_ALIASES[ls]=touch\\nls m'",
  "bash --posix -c $'alias ls=touch\\nls m'", "POSIXLY_CORRECT=1 bash -c $'alias ls=touch\\nls m'",
  "shopt -s expand_aliases; alias ls=touch\nls m", "alias ls=touch; ls m", 'enable -n echo; echo m',
  'printf -v HOME %s /tmp/evil; git status', 'HOME=$PWD git status', 'trap "touch m" EXIT; ls', "trap 'touch m' DEBUG; ls",
  'command_not_found_handle() { touch m; }; nosuchcmd', 'BASH_ENV=x bash -c ls', 'set -o posix; ls', 'set -x; PS4=\'$(touch m)\' ls',
  'PS4=\'$(touch m)\' bash -xc ls', "IFS=t; echo$IFS'ouch'm", 'exec touch m', 'builtin eval "touch m"', 'command eval "touch m"',
  'eval touch m', 'eval "touch m"', "eval 'ls; touch m'", 'source /dev/stdin <<< "touch m"', '. /dev/stdin <<< "touch m"',
  'x=touch; $x m', '${x:0:0}touch m', '$(echo touch) m', '`echo touch` m', '"$(printf touch)" m', "$'\\x74ouch' m",
  't\\ouch m', '"t"ouch m', "'touch' m", '{touch,m}', '/usr/bin/t?uch m', '/usr/bin/tou[c]h m', 'env touch m',
  'timeout 5 touch m', 'nice touch m', 'nohup touch m', 'xargs touch <<< m', 'echo m | xargs touch', 'command touch m',
  'BASH_ALIASES[ls]=touch; ls m', 'declare -f ls; ls', 'set -- touch m; "$@"', 'a=(touch m); "${a[@]}"',
])

const outputs = ['m', '/tmp/m', './m', '"$HOME/m"', '~/m', '"m"', "'m'", '$HOME/m', 'm\\ n', '/dev/shm/m']
add('redirections on compound commands and inside substitutions', false, [
  ...cross(['[[ x ]]', '(( 1 ))', 'case x in esac', 'if true; then :; fi', '{ :; }', '( : )', 'for i in; do :; done', 'while false; do :; done', 'f() { :; }; f'], outputs.slice(0, 4), (cmd, out) => `${cmd} >${out}`),
  ...outputs.map((out) => `echo "$(>${out})"`),
  ...outputs.map((out) => `echo $(>${out})`),
  ...outputs.map((out) => `ls >${out}`),
  ...outputs.map((out) => `echo x >>${out}`),
  ...outputs.map((out) => `ls 2>${out}`),
  ...outputs.map((out) => `ls &>${out}`),
  ...outputs.map((out) => `echo x >|${out}`),
  ...outputs.map((out) => `cat 1<>${out}`),
  ...outputs.map((out) => `[ a > ${out} ]`),
  ...outputs.map((out) => `test a > ${out}`),
  '[[ $(echo line >&2) ]] 2>>m', 'echo `>m`', 'echo "`>m`"', 'cat <(>m)', 'echo >(cat >m)', 'echo x > >(cat >m)',
  'ls 2>/dev/nul[l]', 'ls >/dev/./null', 'ls >/dev/null/../m', 'ls >&m', 'ls >& m', 'echo x 3>m', 'echo x >$HOME/m',
  'exec >m; ls', 'exec 3>m', 'ls >"/dev/null"m', 'echo x >/dev/null >m', '>m', '>>m', 'echo >m',
  'ls | tee m', 'ls | tee -a m', 'ls | tee /dev/null m', 'sort -o m a.txt', 'sort a.txt -o m', 'sort --output=m a.txt',
  "sed -n 'w m' a.txt", "sed 's/a/b/w m' a.txt", "sed -i 's/a/b/' a.txt", "awk '{print > \"m\"}' a.txt",
  "awk 'BEGIN{printf \"\" > \"m\"}'", 'git diff --output=m', 'git log --output=m', 'find . -fprint m', 'find . -fls m',
  'find . -name m -delete', 'find src -delete', 'find . -fprintf m x', "find . -exec touch m \\;", 'find . -exec touch {} +',
])

add('sockets opened by input redirections', false, [
  "printf 'DATA\\n' </dev/tcp/127.0.0.1/9 1<&0", 'cat </dev/tcp/127.0.0.1/9', 'cat < /dev/tcp/127.0.0.1/9', 'cat </dev/udp/127.0.0.1/9',
  'cat <"/dev/tcp/127.0.0.1/9"', "cat <'/dev/tcp/127.0.0.1/9'", 'cat 0</dev/tcp/127.0.0.1/9', 'grep x </dev/tcp/localhost/9',
  'cat <$f', 'cat < "$f"', 'cat <\\/dev/tcp/127.0.0.1/9', 'exec 3<>/dev/tcp/127.0.0.1/9', 'echo x >/dev/tcp/127.0.0.1/9',
  'echo x >/dev/udp/127.0.0.1/9', 'cat </dev/tcp/127.0.0.1/9{,}', 'cat </dev/tc[p]/127.0.0.1/9', 'wc -l </dev/udp/127.0.0.1/53',
  'head -1 < /dev/tcp/127.0.0.1/80', 'ls 3</dev/tcp/127.0.0.1/9', 'ls <&3 3</dev/tcp/127.0.0.1/9', 'cat <<< x </dev/tcp/127.0.0.1/9',
  'cat </dev/tcp/127.0.0.1/9 2>/dev/null', 'cat <"/dev/tcp/$HOSTNAME/9"', 'cat </dev/tcp/${x}/9',
])

add('heredoc ends bash and the parser may disagree on', false, [
  'cat <<EOF\nE\\\nOF\ntouch m\nEOF', "cat <<'EOF'\nEOF \ntouch m\nEOF",
  "cat <<'EOF'\n EOF\ntouch m\nEOF", "cat <<-'EOF'\n  EOF\ntouch m\nEOF", "cat <<'EOF'\nEOF\r\ntouch m\nEOF",
  "cat <<'E O'\nx\nE O\ntouch m", "cat <<'EOF' <<'END'\nEOF\ntouch m\nEND", "cat <<'EOF'; cat <<'END'\nEOF\ntouch m\nEND",
  "cat <<'EOF' \\\n&& touch m\nx\nEOF", "cat <<EOF\n$(touch m)\nEOF", "cat <<EOF\n`touch m`\nEOF",
  "cat <<EOF\n${x:-$(touch m)}\nEOF", "cat <<EOF\n  $(touch m)\nEOF", "cat <<E'OF'\nEOF\ntouch m\nEOF",
  "cat <<\"E\"OF\nEOF\ntouch m\nEOF", "echo $(cat <<'EOF'\n)\nEOF\n); touch m", "cat <<'EOF'\nx\nEOF; touch m\nEOF",
  "bash <<'EOF'\ntouch m\nEOF", "sh <<'EOF'\ntouch m\nEOF", 'bash <<< "touch m"',
  "cat <<'EOF'\n\\\nEOF\ntouch m\nEOF", "cat << 'EOF'\nx\nEOF\ntouch m",
])

add('quotes inside a double-quoted ${…}', false, [
  'echo "${x:-\'$(touch m)\'}"', 'echo "${x:+\'`touch m`\'}"', 'echo "${q:-\'$(touch m)\'}"', 'echo "${x/\'$(touch m)\'/}"',
  'echo "${x#\'$(touch m)\'}"', 'echo "${x%\'$(touch m)\'}"', 'echo "${q:=\'$(touch m)\'}"', 'echo "${q-$(touch m)}"',
  'echo "${x@P}"', 'echo ${x@P}', 'echo "${q:-"$(touch m)"}"', 'echo "${q:-`touch m`}"', 'echo ${q:-$(touch m)}',
  'echo "$ b$(touch m)"', 'echo "${x//a/$(touch m)}"', 'echo "${x^^}" $(touch m)', 'echo "${!x}"',
])

add('public bypass history: chaining, substitution, injection into allowed tools', false, [
  'echo x && touch m', 'echo x; touch m', 'echo x || touch m', 'echo x | touch m', 'echo x & touch m', 'echo x\ntouch m',
  'cd src && touch m', 'cd /tmp; touch m', 'ls # comment\ntouch m', 'echo $(touch m)', 'echo `touch m`', 'echo "$(touch m)"',
  'ls $(touch m)', 'cat <(touch m)', 'echo x > >(touch m)', 'ls && (touch m)', 'ls && { touch m; }', 'if ls; then touch m; fi',
  'for i in 1; do touch m; done', 'while ! ls; do :; done; touch m', 'case x in x) touch m;; esac', '! touch m',
  "sort --compress-program=touch a.txt", "sort -S 1b --compress-program touch a.txt", 'echo a | sort --compress-prog=sh',
  "git -c core.pager='touch m' log", 'git -c core.pager=touch log -p', "git -c alias.x='!touch m' x",
  'git --exec-path=. status', 'GIT_PAGER=touch git log', "GIT_EXTERNAL_DIFF='touch m' git diff", 
  "git log --format='%H' --output=m", 'git show --output=m', 'find . -exec sh -c "touch m" \\;',
  'find . -execdir touch m \\;', 'find . -ok touch m \\;', "find . -name '*' -exec touch {} \\;", 'xargs -a a.txt touch',
  "awk 'BEGIN{system(\"touch m\")}'", "awk 'BEGIN{print | \"sh\"}' <<< 'touch m'", "awk 'BEGIN{\"touch m\" | getline}'",
  "sed -n '1e touch m' a.txt", "sed 's/.*/touch m/e' a.txt", "sed -e '1 e touch m' a.txt", "sed -f a.txt a.txt",
  "awk -f a.txt a.txt", 'find . -name x -o -exec touch m \\;', 'find * -maxdepth 0', 'ls | xargs -I{} touch {}',
  'echo touch m | xargs -0 sh -c', 'ls * && find *', 'find $FOO touch m \\;', 'find . $FOO touch m \\;',
  'sort $OPT a.txt', "man -P 'touch m' ls", 'less +!touch\\ m a.txt', 'tar -cf /dev/null --to-command=touch a.txt',
  'date -s 2020-01-01', 'date --set=x', 'stat --printf="%n" a.txt > m', 'diff a.txt input.txt > m', 'uniq a.txt m',
  'tee m < a.txt', 'cut -c1 a.txt >m', 'tr a b < a.txt > m', 'head a.txt > m', 'basename x > m', 'git status > m',
  'git status; touch m', 'git status && touch m', 'ls -la; rm -f a.txt', 'ls && rm a.txt', 'touch m', 'rm a.txt',
  'sudo touch m', 'cp a.txt m', 'mv a.txt m', 'ln -s a.txt m', 'chmod 777 a.txt', 'dd if=a.txt of=m', 'mkdir m',
  'python3 -c "open(\'m\',\'w\')"', 'perl -e "open(F, \'>m\')"', 'curl -o m http://127.0.0.1:9/', 'nc 127.0.0.1 9',
  'install /dev/null m', 'truncate -s 0 a.txt', 'shred a.txt', 'git init m', 'git add -A', 'git commit -m x',
  'git checkout -- a.txt', 'git stash', 'git branch m', 'git tag m', 'git config user.name x', 'npm install x',
  'echo x$(touch m)y', 'echo "$(<a.txt)"', 'ls ${x:-$(touch m)}', 'ls "${x:-$(touch m)}"',
  "eval $'touch\\x20m'", 'bash -c "touch m"', 'sh -c "touch m"', "bash -c 'ls'", 'bash -c ls', 'env bash -c "touch m"',
  'watch -n 1 ls', 'timeout 1 bash -c "touch m"', 'xargs sh -c "touch m" <<< x', 'coproc touch m', 'time touch m',
])

add('places where tree-sitter-bash and bash disagree', false, [
  // `[ a > m ]` is a comparison for the grammar and a redirection for bash; `"$ b"` a variable for the
  // grammar and text for bash. Found while building the subset, by reading the parse trees.
  '[ "$x" > m ]', '[ x ] > m', 'echo "$ b" > m', '[ a \\> m ]', '[ a < m ]', '[ -n x ] >m',
])

add('found by attacking the subset by hand', false, [
  // `{name}>file` assigns a descriptor number to name, evaluating an array subscript.
  'echo {a[x]}>/dev/null', 'ls {a[N]}>/dev/null', 'echo {BASH_CMDS[ls]}>/dev/null; ls', 'echo hi {a[b]}>/dev/null 2>&1',
  'cat {a[x]}<a.txt', 'echo {a[x]}>&2', 'grep x {a[x]}<<<x', "cat {a[x]}<<'EOF'\nx\nEOF", 'echo {fd}>/dev/null',
  // xargs sets the slot variable in the command's environment: PATH=0 runs ./0/ls.
  'mkdir -p 0 && cp evilbin/ls 0/ls; ls | xargs --process-slot-var=PATH ls', 'xargs --process-slot-var=PATH -a a.txt ls',
  // A run-time word among a wrapper's own options or operands moves where its command starts
  // (w='5 touch pwned-w', u='-u'): the policy saw `ls`, the wrapper ran touch.
  'timeout $w ls', 'nice -n $w ls', 'stdbuf -o $w ls', 'env -u $w ls', 'taskset $w ls', 'xargs -n $w ls < a.txt',
  'env "$u" ls touch m', 'timeout "$w" ls', 'timeout 1* ls', 'nice -n $w ls -la | wc -l',
])

add('for loops: the variable, the list and the body', false, [
  // The loop assigns its variable: a name a program reads (PATH, HOME, LD_PRELOAD…) would change what runs.
  'for PATH in evilbin; do ls; done', 'for PATH in $PWD/evilbin; do ls m; done', 'for HOME in .; do git status; done',
  'for BASH_CMDS in x; do ls; done', 'for IFS in t; do echo$IFS"ouch" m; done', 'for LD_PRELOAD in x; do ls; done',
  'for http_proxy in x; do ls; done', 'for _ in x; do ls; done',
  // A value from the list is a run-time word in the body, whatever the list holds.
  'for f in -delete; do find . $f; done', 'for f in *; do find . $f; done', 'for f in --pre=touch; do rg x $f .; done',
  'for f in *; do rg x $f; done', 'for f in -v; do test $f "$b"; done', 'for f in -v; do [ "$f" "$b" ]; done',
  "for x in 'a[$(touch m)]'; do echo $((x)); done", 'for f in touch; do $f m; done', 'for f in -o; do sort $f m a.txt; done',
  'for f in "5 touch m"; do timeout $f ls; done', 'for f in --output=m; do git log $f; done', 'for f in -i; do sed $f s/a/b/ a.txt; done',
  // Redirections and reserved words around the loop, and loops that are not `for … in`.
  'for f in a; do echo $f; done > m', 'for f in a; do echo; done 2>m', 'for f in a; do ls; done | tee m',
  'for ((i=x;i<1;i++)); do ls; done', 'select f in a; do ls; break; done <<< 1', 'for f; do ls; done; mkdir m',
  'for f in a; do mkdir m; done', 'for f in $(mkdir m); do ls; done', 'for f in a; do ls & mkdir m; done',
  'for f in a; do x=$b; echo $((x)); done', 'for f in a; do BASH_CMDS[ls]=/usr/bin/touch; ls m; done',
])

add('subshells', false, [
  '(PATH=evilbin; ls)', '( ls ) >m', '(ls) 2>m', '(ls; mkdir m)', '(set -o posix; ls)', '(ls &)', '(cd evilbin && ./ls)',
  '(echo {a[x]}>/dev/null)', '( x=$b; echo $((x)) )', '((x))', '((x) )', '( (x) ) >m', '(ls) | tee m', '(hash -p /usr/bin/touch ls; ls m)',
  "(cat <<'EOF'\nEOF\nmkdir m\nEOF\n)",
])

add('substitutions in argument position', false, [
  // Their output is a run-time word: never a command name, a wrapper's option or an option of a program that runs things.
  '"$(echo touch)" m', 'x$(echo) m', 'find . $(echo -delete)', 'find $(echo . -delete)', 'find . "$(echo -delete)"',
  'git $(echo -c core.pager=touch) log', 'git log $(echo --output=m)', 'git -C $(echo .) -c alias.x=!touch x',
  'sed $(echo -i) s/a/b/ a.txt', 'sort $(echo --compress-program=touch) a.txt', 'sort -o $(echo m) a.txt', 'rg x $(echo --pre=touch) .',
  'rg x <(echo) $(echo --pre=touch)', 'timeout $(echo 5 touch m) ls', 'nice -n $(echo 1 touch m) ls', 'xargs $(echo touch) < a.txt',
  'env $(echo LD_PRELOAD=x) ls', 'command $(echo touch) m', 'tee $(echo m) < a.txt', 'uniq a.txt $(echo m)',
  'test $(echo -v) "$b"', '[ $(echo -v) "$b" ]', '[ "$(echo -v)" "$b" ]', 'test "$(echo -v)" "$b"', 'printf "$(echo -v)" x 1',
  'set $(echo -x); ls', 'cat a.txt > $(echo m)', 'echo x >"$(echo m)"', 'ls 2>$(echo m)', 'cat < $(echo /dev/tcp/127.0.0.1/9)',
  'cat < <(cat </dev/tcp/127.0.0.1/9)', 'diff <(cat </dev/tcp/127.0.0.1/9) a.txt',
  // What runs inside is decided as a line of its own.
  'echo $(mkdir m)', 'echo "$(mkdir m)"', 'ls <(mkdir m)', 'echo $(echo {a[x]}>/dev/null)', 'echo "$(x=1; echo $((x)))"',
  'echo $(PATH=evilbin ls)', 'echo "$(cd evilbin && ./ls)"', 'echo $( (mkdir m) )', 'echo $(ls & mkdir m)', 'echo $(ls\nmkdir m)',
  'echo $(ls >m)', 'echo "$(ls 2>m)"', 'echo $(echo $((x)))', 'echo $(bash -c "mkdir m")',
  // Forms kept out: arithmetic first (`$((x) )` runs x), backticks, `>(…)`, comments inside.
  'echo $((mkdir m) )', 'echo `mkdir m`', 'echo >(mkdir m)', 'cat >(cat >m)', 'ls > >(tee m)', 'echo $(echo a #); mkdir m)',
  "echo $(cat <<'EOF'\nx\nEOF\n); mkdir m",
])

add('rg and find globs that could become options', false, [
  // The work directory holds files named -delete, -exec, --pre=touch, --output=pwned-out.
  'rg x *', 'rg x ?*', 'rg x [-]*', 'rg x "-"*', 'rg x \\-*', 'rg x {-,}*', 'rg x -*', 'rg x ~/*', 'find * -maxdepth 0 -print',
  'find -* -maxdepth 0', 'find ?* -maxdepth 0', 'find [-]* -maxdepth 0', "find '-'* -maxdepth 0", 'find src/* -delete',
  'rg --pre touch x src/*',
  // Globs that select only the dangerous name (any other option-like name makes the program refuse the whole line).
  'rg x --p*', 'rg x ?-pre*', 'rg x [-]-pre*', 'rg x *=touch', 'find -de* -maxdepth 0', 'find ?de* -maxdepth 0', 'find [-]del*',
  'find . -maxdepth 1 -name x.ts ?de*', 'find *lete',
])

add('cd within a line', false, [
  // A cd changes the directory only; a relative command name after it is another directory's program.
  'cd evilbin; ./ls', 'cd evilbin && ./cat m', 'cd src; ../evilbin/ls', 'cd evilbin && PATH=. ls', 'cd src && mkdir m',
  'cd / && ls >m', 'cd $(mkdir m)', 'cd "$(echo evilbin)" && ./ls', 'for d in evilbin; do cd $d; ./ls; done', '(cd evilbin; ./echo m)',
  'cd evilbin; hash -r; ls', 'cd evilbin; source ./ls', 'cd evilbin; . ./ls',
])

add('git global options', false, [
  'git -c core.pager=touch --no-pager log', 'git --no-pager -c core.pager=touch log -p', "git -C . -c alias.x='!touch m' x",
  'git --git-dir=.git -c core.pager=touch log', 'git -p -c core.pager=touch log', 'git -C $x log', 'git -C "$(echo .)" log',
  'git --exec-path=. --no-pager status', 'git --no-pager log --output=m', 'git -C src --no-pager diff --output=m',
  'GIT_PAGER=touch git --no-pager log', 'git --no-pager -C . --config-env=core.pager=x log', 'git -P log > m', 'git -p log -1',
  'git --paginate log -1', 'git --git-dir=.git log -1', 'git --work-tree=. status',
])

add('cat - before a heredoc', false, [
  "cat - <<EOF\n$(touch m)\nEOF", "cat - <<'EOF' >m\nx\nEOF", "cat - - <<'EOF'\nx\nEOF\nmkdir m", "cat -<<'EOF'\nx\nEOF\nmkdir m",
  "cat - <<'EOF'\nEOF \nmkdir m\nEOF", "mkdir - <<'EOF'\nx\nEOF", "cat - 2>m <<'EOF'\nx\nEOF", 'ls && mkdir - 2>/dev/null',
  'ls | mkdir - 2>/dev/null', 'ls && cat - 2>m',
])

/** Lines the generator (test/oracle.test.ts) found allowed and harmful; kept so they stay caught. */
add('the generator caught these', false, [
  // seed 7: after a pipeline, tree-sitter-bash continued the last command across the newline, so
  // `bash` became an argument of `diff` and its heredoc data; bash ran it as a script.
  "test >/dev/stderr | echo $((1+1)) | diff $f -o $x\nbash <<-'EOF'\n$(touch m)\nEOF",
  "ls | diff a.txt a.txt\nbash <<'EOF'\ntouch m\nEOF", "echo $((1+1)) | wc -l\nsh <<'EOF'\ntouch m\nEOF",
  "ls | grep x | diff a.txt -\nbash <<-'EOF'\n\ttouch m\n\tEOF",
  // seed 20261202: an escaped blank before `#` is a comment for tree-sitter-bash, a word for bash.
  'git status \\ #x <(touch m) -eq | rm "$f" $((x)) -name a[x] &>/dev/null\ngrep x <<\\EOF\n${x:-$(touch m)}\nEOF',
  'echo a\\ #x; touch m', 'ls \\ #x <(touch m)', 'echo \\ # | touch m', "echo a\\\t#x; touch m", 'echo \\\\\\ #x; touch m',
])

/** Issue 25 (rows 1, 2, 12 of the third round): the program readers, with the harmless lines they must keep allowing. */
add('harmless: sed, awk, tar and less lines the program readers read (issue 25)', true, [
  "sed 's/[[:space:]]*$//' a.txt", "sed -n '/[/]/p;s|[|]|x|g' a.txt", "sed -e 's/a/b/' -e 'y/ab/ba/' a.txt", "sed ':a;N;$!ba;s/\\n/ /g' a.txt",
  "sed --sandbox -e '1e touch m' a.txt", "sed -n '1{p;q}' a.txt",
  "awk '{s+=length($0)} END {print s/NR}' a.txt", "awk '!seen[$0]++' a.txt", "awk '/^[a-z]/ && /[[:alpha:]]+$/' a.txt",
  "awk '{ print (1 > 2) }' a.txt", "awk 'BEGIN { while ((getline line < \"a.txt\") > 0) print line }'", "awk '{\n  print $1 # first\n}' a.txt",
  'tar -tf a.tar', 'tar tvf a.tar', 'tar -tzf a.tar.gz', 'tar -xOf a.tar d/f', 'tar xOf a.tar', 'tar --list --file=a.tar --wildcards "d/*"',
  'less -N a.txt', 'less +G -R a.txt', 'cat a.txt | less -S', 'more +2 a.txt',
])

add('issue 25: program readers (round 3, rows 1, 2 and 12)', false, [
  // Row 1: a bracket expression holding the delimiter hid the e flag from the sed reader.
  "sed -n 's|[[:alpha:]|]*|touch /tmp/m|e' a.txt", "sed -n 's|[[:digit:][:alpha:]|]*|touch /tmp/m|e' a.txt",
  "sed -n 's|[[.x.]|]*|touch /tmp/m|e' a.txt", "sed -n 's|[[=x=]|]*|touch /tmp/m|e' a.txt", "sed -E -n 's|[[:alpha:]|]+|touch /tmp/m|e' a.txt",
  // Found while rewriting the sed reader after sed's own scanner.
  "sed -n ':x e touch m' a.txt", "sed -e '1e touch m' --sandbox a.txt", "sed -e 's/a/b/w m' --sandbox a.txt", "sed 's/x/y/ w m' a.txt",
  // Row 2: a quote in an awk comment, backslash-newline, a regex that ends early for the reader.
  'awk \'# say "hi\nBEGIN { system("touch m") } # "\' a.txt', 'awk \'BEGIN { system\\\n("touch m") }\'',
  'awk \'BEGIN { print "x" \\\n> "m" }\'', 'awk \'/[/]"/ { print } # "\nBEGIN { system("touch m") }\' a.txt',
  'awk \'{ print "a" > "/dev/stdout" "x" }\' a.txt', 'gawk \'BEGIN { "touch m" |& getline }\'',
  // Row 12: tar's writing modes.
  'tar -cf m a.txt', 'tar cf m a.txt', 'tar czf m.tgz a.txt', 'tar -rf a.tar notes.txt', 'tar -xf a.tar', 'tar xvf a.tar',
  'tar -tf a.tar --index-file=m', 'tar -xf a.tar --to-command="touch m"', 'tar --delete -f a.tar d/f',
  // less: a lesskey source whose #env section sets LESSOPEN runs it even when less only copies.
  // (less -o writes its log only at a terminal: kept as an attack the oracle cannot see.)
  'less --lesskey-src=keys a.txt', 'less -o m a.txt',
])
