# Installs the agent binary (see src/install.ts): run as `bash --noprofile --norc -c <this> install
# <where> <x64 sha256> <x64 size> <arm64 sha256> <arm64 size>` ("-" for a missing build). <where>:
# `cache` (the user's cache: ${XDG_CACHE_HOME:-~/.cache}/dsh-bash), or a base directory to which
# the user's uid is added (a pod's /.dsh-bash/<uid>: its PID 1 looks there). It says
# `arch <x64|arm64>`, reads exactly that build's size in bytes from stdin, checks its SHA-256, and
# renames it to <dir>/agent-<sha256> (mode 0500). Last line: `ready <path>` or `fail <why>`.
# The directory is made private (umask 077) and must be ours and closed to others: nobody else may
# plant or swap a file in it. A concurrent installation of the same version writes its own
# temporary file and renames it over the same name: the content is the same either way.
# Needs bash and coreutils only (mkdir, stat, uname, mktemp, head, sha256sum, chmod, mv).
set -u
fail() { printf 'fail %s\n' "$*"; exit 1; }
if [ "$1" = cache ]; then
  case ${XDG_CACHE_HOME-} in /*) d=$XDG_CACHE_HOME/dsh-bash ;; *) d=$HOME/.cache/dsh-bash ;; esac
else
  d=$1/$UID
fi
umask 077
mkdir -p -- "$d" 2>/dev/null || fail "cannot create the directory $d"
{ [ -d "$d" ] && [ ! -L "$d" ] && [ -O "$d" ]; } || fail "$d is not a directory owned by uid $UID"
m=$(stat -c %a -- "$d") || fail "cannot stat $d"
(( (8#$m & 8#022) == 0 )) || fail "$d is writable by others (mode $m)"
case $(uname -m) in
  x86_64 | amd64) a=x64 sha=$2 size=$3 ;;
  aarch64 | arm64) a=arm64 sha=$4 size=$5 ;;
  *) fail "no agent for the architecture $(uname -m)" ;;
esac
[ "$sha" != - ] || fail "no agent built for $a"
printf 'arch %s\n' "$a"
t=$(mktemp "$d/.agent-XXXXXXXX") || fail "cannot create a file in $d"
head -c "$size" >"$t" || { rm -f -- "$t"; fail "cannot write $t"; }
[ "$(sha256sum <"$t")" = "$sha  -" ] || { rm -f -- "$t"; fail "the copy in $d does not have the SHA-256 of the agent (cut short?)"; }
{ chmod 0500 -- "$t" && mv -f -- "$t" "$d/agent-$sha"; } || { rm -f -- "$t"; fail "cannot rename $t to $d/agent-$sha"; }
printf 'ready %s\n' "$d/agent-$sha"
