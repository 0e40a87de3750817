/**
 * The shell text run on the remote side. Everything is handed to sshd as one `exec` request, which
 * sshd runs as `$SHELL -c <text>` with the user's login shell (a POSIX shell is assumed): the text
 * is always `exec <bash> --noprofile --norc -c '<script>' <name> '<arg>'…`, so that the login shell
 * is replaced at once and sshd's exit status is the command's own.
 */
import { TERMINAL_TERM } from '@deepseek-ai/dsh-bash'
import { assertEnvName, CGROUP_VARIABLE, closeInheritedFds, MARKER_VARIABLE, NON_INTERACTIVE_ENV } from '@deepseek-ai/dsh-bash-kit'

/** The first stdout line of every command, stripped before output is collected. */
export const HEADER_PREFIX = '@dsh-bash-ssh '

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
  /**
   * True when sshd runs the command in a pseudo-terminal (an interactive task): stdin stays the
   * terminal, and `TERM` is the terminal's (`xterm-256color`) instead of `dumb`.
   */
  terminal?: boolean
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
    // With a pty, sshd made the session (its controlling terminal is the pty): the check passes.
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
  lines.push(`unset BASH_ENV ENV ${CGROUP_VARIABLE} ${MARKER_VARIABLE}`)
  const env: Record<string, string> = { ...NON_INTERACTIVE_ENV, ...(options.terminal ? { TERM: TERMINAL_TERM } : {}), ...(options.env ?? {}) }
  for (const [name, value] of Object.entries(env)) {
    assertEnvName(name)
    lines.push(`export ${name}=${shellQuote(value)}`)
  }
  lines.push(
    `export ${MARKER_VARIABLE}="$mk"`,
    'unset wd mk',
    `printf '${HEADER_PREFIX}ok %s\\n' "$$"`,
  )
  if (!options.hasStdin && !options.terminal) lines.push('exec </dev/null')
  // sshd closes its own descriptors before the session's shell starts; this covers a login shell
  // or a wrapper on the remote side that leaves one open, as the local executor does for its server.
  lines.push(closeInheritedFds())
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
 * Shell functions shared by the control helpers. A command's processes are found by its process
 * group (`$pg`, the pid the wrapper reported; 0 for none) and by its marker (`$mk`) in
 * /proc/<pid>/environ, so descendants that left the group (setsid, nohup, double fork) are found
 * too. Zombies, kernel threads and exiting processes never count. `nap <ms>` is defined by each script.
 *
 * The same rigour as the local marker tracker (bash-local scan.ts and exact-kill.ts, issue 19): a
 * process inside execve reads an empty environment for a moment, so an empty environment with
 * empty arguments is `unsure` and the settled scan (`sscan`) looks again; the tree is empty only
 * after two consecutive settled scans found nothing (`empty`); the kill freezes the tree (SIGSTOP
 * to a fixpoint where a scan finds nothing new) before SIGKILL, then confirms. Environments are
 * read with `mapfile -d ''` (bash ≥ 4.4): one read per process, no process started per scan.
 */
const CONTROL_FUNCTIONS = [
  // Sets `pids` (all live processes of the command), `xpids` (those outside its process group)
  // and `unsure` (processes caught inside execve: their environment cannot be read yet).
  'scan() {',
  '  pids="" xpids="" unsure=""; local f p l s x vars',
  '  for f in /proc/[0-9]*/stat; do',
  '    { read -r l <"$f"; } 2>/dev/null || continue',
  '    p=${f#/proc/}; p=${p%/stat}',
  '    l=${l##*) }; set -f; set -- $l; set +f',
  '    case $1 in Z|X) continue;; esac',
  // PF_KTHREAD | PF_EXITING: a kernel thread, or a process that can only die now.
  '    (( $7 & 0x200004 )) && continue',
  '    if [ "$pg" -gt 0 ] && [ "$3" = "$pg" ]; then pids+=" $p"; continue; fi',
  '    [ -n "$mk" ] && [ "$p" != "$$" ] && [ "$p" != "$BASHPID" ] || continue',
  '    { mapfile -d "" -t vars <"/proc/$p/environ"; } 2>/dev/null || continue',
  '    if [ ${#vars[@]} -eq 0 ]; then',
  // Empty: a cleared environment, or a read that fell into an execve. Arguments are set in the
  // same step as the environment: with arguments the exec is over and a new read is what it runs with.
  '      x=""; { IFS= read -r -d "" x <"/proc/$p/cmdline"; } 2>/dev/null',
  '      if [ $? -ne 0 ] && [ -z "$x" ]; then unsure+=" $p"; continue; fi',
  '      { mapfile -d "" -t vars <"/proc/$p/environ"; } 2>/dev/null || continue',
  '    fi',
  `    s=$'\\001'; IFS=$'\\001'; s+="\${vars[*]}"$'\\001'; IFS=$' \\t\\n'`,
  `    case $s in *$'\\001'"${MARKER_VARIABLE}=$mk"$'\\001'*) pids+=" $p" xpids+=" $p";; esac`,
  '  done',
  '}',
  // A scan with no process left unsure (for at most about a second).
  'sscan() {',
  '  local i',
  '  for ((i = 0; i < 50; i++)); do scan; [ -z "$unsure" ] && return 0; nap 1; done',
  '}',
  // True when two consecutive settled scans find nothing.
  'empty() { sscan; [ -z "$pids" ] || return 1; sscan; [ -z "$pids" ]; }',
  // The group as a whole (atomic for its members), only while a scan still sees a member (its id is ours only then).
  'grp() { [ "$pg" -gt 0 ] && [ "$pids" != "$xpids" ] && kill -"$1" -- -"$pg" 2>/dev/null; }',
  // One signal per process: the group, then the escapees.
  'sig() {',
  '  scan; [ -n "$pids" ] || return 1',
  '  grp "$1"',
  '  [ -n "$xpids" ] && kill -"$1" $xpids 2>/dev/null',
  '  [ "$1" = TERM ] && kill -CONT $pids 2>/dev/null',
  '  return 0',
  '}',
  // SIGSTOP to a fixpoint (a stopped process cannot fork; a fork under way restarts or its child
  // is visible to the next scan), SIGKILL everything frozen, then confirm with two empty scans.
  'freeze_kill() {',
  '  local frozen=" " fresh p i n=0',
  '  for ((i = 0; i < 200; i++)); do',
  '    sscan; fresh=""',
  '    for p in $pids; do case $frozen in *" $p "*) ;; *) fresh+=" $p";; esac; done',
  '    [ -z "$fresh" ] && break',
  '    grp STOP; kill -STOP $fresh 2>/dev/null; frozen+="${fresh# } "',
  '  done',
  '  grp KILL; [ -n "${frozen// }" ] && kill -KILL $frozen 2>/dev/null',
  '  for ((i = 0; i < 250 && n < 2; i++)); do',
  '    sscan',
  '    if [ -z "$pids" ]; then n=$((n + 1)); continue; fi',
  '    n=0; grp KILL; kill -KILL $pids 2>/dev/null; nap 20',
  '  done',
  '}',
  'secs() { printf -v s "%d.%03d" $(($1 / 1000)) $(($1 % 1000)); }',
  // TERM to everything, the freezing KILL after `$arg` ms to whatever is left.
  'terminate() {',
  '  local waited=0 step=10',
  '  sig TERM || { empty && return 0; }',
  '  while [ "$waited" -lt "$arg" ]; do',
  '    [ $((arg - waited)) -lt $step ] && step=$((arg - waited))',
  '    nap $step; waited=$((waited + step))',
  '    empty && return 0',
  '    [ $step -lt 100 ] && step=$((step * 2))',
  '  done',
  '  freeze_kill',
  '}',
  // Until no process is left; stops early (status 1) when nap says the requester is gone.
  'wait_empty() {',
  '  local step=10',
  '  until empty; do',
  '    nap $step || return 1',
  '    [ $step -lt 200 ] && step=$((step * 2))',
  '  done',
  '}',
]

/**
 * A one-shot control helper: `<op> <pgid> <marker> <arg>` with op `count`, `term` (arg: grace ms)
 * or `wait`. Naps are `read -t` on the channel's stdin: when the client ends the channel (or the
 * connection dies), a `wait` stops at once instead of outliving its purpose.
 */
export const CONTROL_SCRIPT = [
  'op=$1 pg=$2 mk=$3 arg=$4 pids="" xpids="" unsure="" eof=""',
  ...CONTROL_FUNCTIONS,
  'nap() {',
  '  local s; secs "$1"',
  '  if [ -z "$eof" ]; then',
  '    read -r -t "$s" -n 1 _; [ $? -gt 128 ] && return 0',
  '    eof=1; return 1',
  '  fi',
  '  sleep "$s"',
  '}',
  'case $op in',
  '  count) sscan; set -f; set -- $pids; set +f; echo "$#" ;;',
  '  term) terminate; echo done ;;',
  '  wait) wait_empty && echo empty ;;',
  '  *) echo "unknown op $op" >&2; exit 2 ;;',
  'esac',
].join('\n')

/**
 * The control agent: one per connection, started on the first control request, serving
 * `<id> <op> <pgid> <marker> <arg>` lines from stdin with `<id> <answer>` lines on stdout (`count`
 * answers at once; `term` and `wait` run in the background and answer when done). It saves a
 * session channel and two shell starts per request. Naps read a private FIFO with a timeout (no
 * process per nap). Its first line is `@dsh-bash-ssh agent` (anything a login shell printed before
 * it is skipped). When its stdin ends (the client closed it or the connection died) it exits;
 * running waits notice and stop, running terminations go on to their end.
 */
export const AGENT_SCRIPT = [
  'agent=$$ nofifo="" pids="" xpids="" unsure=""',
  '{ f=$(mktemp -u "${TMPDIR:-/tmp}/dsh-bash-ssh-nap.XXXXXXXXXX") && mkfifo -m 600 "$f" && exec 9<>"$f" && rm -f -- "$f"; } 2>/dev/null || nofifo=1',
  ...CONTROL_FUNCTIONS,
  `echo '${HEADER_PREFIX}agent'`,
  'nap() {',
  '  local s; secs "$1"',
  '  if [ -z "$nofifo" ]; then read -r -t "$s" -u 9 _; else sleep "$s"; fi',
  '  kill -0 "$agent" 2>/dev/null',
  '}',
  'while read -r id op pg mk arg; do',
  '  case $op in',
  '    count) sscan; set -f; set -- $pids; set +f; echo "$id $#" ;;',
  '    term) ( terminate; echo "$id done" ) & ;;',
  '    wait) ( wait_empty && echo "$id empty" ) & ;;',
  '    *) echo "$id error" ;;',
  '  esac',
  'done',
].join('\n')
