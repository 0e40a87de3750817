/**
 * The shell text run on the remote side. Everything is handed to sshd as one `exec` request, which
 * sshd runs as `$SHELL -c <text>` with the user's login shell (a POSIX shell is assumed): the text
 * is always `exec <bash> --noprofile --norc -c '<script>' <name> '<arg>'…`, so that the login shell
 * is replaced at once and sshd's exit status is the command's own.
 */
import { NON_INTERACTIVE_ENV } from '@deepseek-ai/dsh-bash-kit'

/** The first stdout line of every command, stripped before output is collected. */
export const HEADER_PREFIX = '@dsh-bash-ssh '

/** The variable holding the per-command marker, inherited by every descendant (as in bash-local). */
export const MARKER_VARIABLE = 'DSH_BASH_TASK'

/** The kernel's limit for one argument (MAX_ARG_STRLEN, with its NUL): sshd's `$SHELL -c <text>` is one argument. */
export const MAX_EXEC_TEXT_BYTES = 128 * 1024 - 1

/** Quotes a string for a POSIX shell (and bash). */
export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`
}

/** The text sshd is asked to run: `exec <shell> --noprofile --norc -c <script> <name> <args…>`. */
export function execText(shell: string, script: string, name: string, args: readonly string[]): string {
  return ['exec', shellQuote(shell), '--noprofile', '--norc', '-c', shellQuote(script), shellQuote(name), ...args.map(shellQuote)].join(' ')
}

export interface WrapperOptions {
  /** The shell the command runs in (the remote `bash`). */
  shell: string
  /** Name fragments of secret-looking variables removed from the remote environment. */
  secretPatterns: readonly string[]
  /** A trusted caller's variables (win over the defaults). */
  env?: Readonly<Record<string, string>>
  /** True when the caller sends stdin bytes; else stdin is /dev/null. */
  hasStdin: boolean
}

/**
 * The per-command wrapper. Arguments: workdir, marker, mode (`arg`: the command is $4; `file`: $4
 * is a private temp file holding it, deleted once read). It makes sure it leads its own session
 * (sshd already calls setsid for a session without a pty; else it re-executes itself through
 * `setsid`), enters the workdir, builds the environment, reports `@dsh-bash-ssh ok <pid>` on
 * stdout, and replaces itself with `bash --noprofile --norc -c <command>`, so the pid it reported
 * is the command's main process, its process group and its session.
 */
export function wrapperScript(options: WrapperOptions): string {
  const lines: string[] = [
    'wd=$1 mk=$2 mode=$3 src=$4',
    // Lead a session of our own (no controlling terminal; the group can be signalled as a whole).
    'if [ -z "${DSH_SSH_SETSID-}" ] && { read -r st </proc/$$/stat; } 2>/dev/null; then',
    '  st=${st##*) }; set -f; set -- $st; set +f',
    '  if [ "$4" != "$$" ] && command -v setsid >/dev/null 2>&1; then',
    '    export DSH_SSH_SETSID=1',
    '    if [ "$3" = "$$" ]; then exec setsid -w "$BASH" --noprofile --norc -c "$BASH_EXECUTION_STRING" "$0" "$wd" "$mk" "$mode" "$src"; fi',
    '    exec setsid "$BASH" --noprofile --norc -c "$BASH_EXECUTION_STRING" "$0" "$wd" "$mk" "$mode" "$src"',
    '  fi',
    'fi',
    'unset DSH_SSH_SETSID CDPATH st',
    'if ! cd -- "$wd" 2>/dev/null; then',
    `  if [ ! -e "$wd" ]; then echo '${HEADER_PREFIX}nowd'; elif [ ! -d "$wd" ]; then echo '${HEADER_PREFIX}notdir'; else echo '${HEADER_PREFIX}noaccess'; fi`,
    '  exit 125',
    'fi',
  ]
  const patterns = options.secretPatterns.filter((p) => p !== '')
  if (patterns.length > 0) {
    const cases = patterns.map((p) => `*${shellQuote(p.toUpperCase())}*`).join('|')
    lines.push(`for __n in $(compgen -e); do case "\${__n^^}" in ${cases}) unset "$__n" 2>/dev/null;; esac; done; unset __n`)
  }
  lines.push(`unset BASH_ENV ENV DSH_BASH_CGROUP ${MARKER_VARIABLE}`)
  const env: Record<string, string> = { ...NON_INTERACTIVE_ENV, ...(options.env ?? {}) }
  for (const [name, value] of Object.entries(env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`invalid env: bad variable name ${JSON.stringify(name)}`)
    lines.push(`export ${name}=${shellQuote(value)}`)
  }
  lines.push(
    `export ${MARKER_VARIABLE}="$mk"`,
    'unset wd mk',
    `printf '${HEADER_PREFIX}ok %s\\n' "$$"`,
  )
  if (!options.hasStdin) lines.push('exec </dev/null')
  const shell = shellQuote(options.shell)
  lines.push(
    `if [ "$mode" = file ]; then exec ${shell} --noprofile --norc -c 'eval "$(cat -- "$0" && rm -f -- "$0")"' "$src"; fi`,
    `exec ${shell} --noprofile --norc -c "$src"`,
  )
  return lines.join('\n')
}

/** Writes stdin to a new private temp file and prints its path (for commands too long for one argument). */
export const UPLOAD_TEXT =
  'umask 077; f=$(mktemp "${TMPDIR:-/tmp}/dsh-bash-ssh.XXXXXXXXXX") || exit 1; cat >"$f" || { rm -f -- "$f"; exit 1; }; printf \'%s\\n\' "$f"'

/**
 * The control script: `count`, `term <graceMs>` or `wait` for one command, found by its process
 * group (the pid reported by the wrapper; 0 for none) and by its marker in /proc/<pid>/environ, so
 * descendants that left the group (setsid, nohup, double fork) are found too. Zombies never count.
 * Waits use `read -t` on the channel's stdin: when the client ends the channel (or the connection
 * dies), a waiting `wait` stops at once instead of outliving its purpose.
 */
export const CONTROL_SCRIPT = [
  'op=$1 pg=$2 mk=$3 arg=$4 pids="" eof=""',
  'scan() {',
  '  pids=""; local f l p',
  '  if [ "$pg" -gt 0 ]; then',
  '    for f in /proc/[0-9]*/stat; do',
  '      { read -r l <"$f"; } 2>/dev/null || continue',
  '      l=${l##*) }; set -f; set -- $l; set +f',
  '      case $1 in Z|X) continue;; esac',
  '      [ "$3" = "$pg" ] || continue',
  '      p=${f#/proc/}; pids+=" ${p%/stat}"',
  '    done',
  '  fi',
  '  if [ -n "$mk" ]; then',
  `    for f in $(grep -lzxF -e "${MARKER_VARIABLE}=$mk" /proc/[0-9]*/environ 2>/dev/null); do`,
  '      p=${f#/proc/}; p=${p%/environ}',
  '      case " $pids " in *" $p "*) continue;; esac',
  '      { read -r l <"/proc/$p/stat"; } 2>/dev/null || continue',
  '      l=${l##*) }; case ${l%% *} in Z|X) continue;; esac',
  '      pids+=" $p"',
  '    done',
  '  fi',
  '}',
  // Sleeps $1 ms; returns 1 when stdin ended (the client gave up), after which plain sleep is used.
  'nap() {',
  '  local s; printf -v s "%d.%03d" $(($1 / 1000)) $(($1 % 1000))',
  '  if [ -z "$eof" ]; then',
  '    read -r -t "$s" -n 1 _; [ $? -gt 128 ] && return 0',
  '    eof=1; return 1',
  '  fi',
  '  sleep "$s"',
  '}',
  'sig() {',
  '  scan; [ -n "$pids" ] || return 1',
  '  [ "$pg" -gt 0 ] && kill -"$1" -- -"$pg" 2>/dev/null',
  '  kill -"$1" $pids 2>/dev/null',
  '  [ "$1" = TERM ] && kill -CONT $pids 2>/dev/null',
  '  return 0',
  '}',
  'case $op in',
  '  count) scan; set -f; set -- $pids; set +f; echo "$#" ;;',
  '  term)',
  '    if sig TERM; then',
  '      waited=0 step=10',
  '      while [ "$waited" -lt "$arg" ]; do',
  '        [ $((arg - waited)) -lt $step ] && step=$((arg - waited))',
  '        nap $step; waited=$((waited + step))',
  '        scan; [ -z "$pids" ] && break',
  '        [ $step -lt 100 ] && step=$((step * 2))',
  '      done',
  // After SIGKILL, give the kernel up to ~5 s to finish (processes in uninterruptible sleep).
  '      for ((i = 0; i < 100; i++)); do sig KILL || break; nap 50; done',
  '    fi',
  '    echo done ;;',
  '  wait)',
  '    step=10',
  '    while scan; [ -n "$pids" ]; do',
  '      nap $step || exit 0',
  '      [ $step -lt 200 ] && step=$((step * 2))',
  '    done',
  '    echo empty ;;',
  '  *) echo "unknown op $op" >&2; exit 2 ;;',
  'esac',
].join('\n')
