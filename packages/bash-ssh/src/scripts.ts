/**
 * The shell text run on the remote side. Everything is handed to sshd as one `exec` request, which
 * sshd runs as `$SHELL -c <text>` with the user's login shell (a POSIX shell is assumed): the text
 * is always `exec <bash> --noprofile --norc -c '<script>' <name> '<arg>'…`, so that the login shell
 * is replaced at once and sshd's exit status is the command's own.
 */
import { TERMINAL_ENV } from '@deepseek-ai/dsh-bash'
import { assertEnvName, CGROUP_VARIABLE, closeInheritedFds, fillScript, MARKER_VARIABLE, NON_INTERACTIVE_ENV, readScript } from '@deepseek-ai/dsh-bash-kit'

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
   * terminal, and `TERMINAL_ENV` applies (`TERM=xterm-256color` instead of `dumb`, the pagers' secure modes).
   */
  terminal?: boolean
  /** bash lines setting the command's rlimits (`rlimitLines` of dsh-bash-kit); they end the start with 125 when refused. */
  rlimits?: string
}

/**
 * The per-command wrapper. Arguments: workdir, marker, mode (`arg`: the command is $4; `file`: $4
 * is a private temp file holding it, deleted once read). It makes sure it leads its own session
 * (sshd already calls setsid for a session without a pty; else it re-executes itself through
 * `setsid`), enters the workdir, builds the environment, reports `@dsh-bash-ssh ok <pid> <start>`
 * on stdout (a terminal's adds its tty name: `ok <pid> <start> /dev/pts/N`), and replaces itself with `bash --noprofile --norc -c <command>`, so the pid it reported
 * is the command's main process, its process group and its session. `<start>` is that process's
 * start time (field 22 of /proc/<pid>/stat, clock ticks since boot; `exec` keeps it): with the pid
 * it names the group's leader for good (the group claim, scripts/control-functions.sh). Empty when
 * /proc cannot be read.
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
  const env: Record<string, string> = { ...NON_INTERACTIVE_ENV, ...(options.terminal ? TERMINAL_ENV : {}), ...(options.env ?? {}) }
  for (const [name, value] of Object.entries(env)) {
    assertEnvName(name)
    lines.push(`export ${name}=${shellQuote(value)}`)
  }
  lines.push(
    `export ${MARKER_VARIABLE}="$mk"`,
    'unset wd mk',
    // The cut at the last `) `: the name (field 2) may hold spaces and parentheses; field 22 is then $20.
    'st=""; { read -r st </proc/$$/stat; } 2>/dev/null; st=${st##*) }; set -f; set -- $st; set +f',
    // A terminal's name rides along (`tty`: the pty sshd gave it), so its modes can be read later (TERMINAL_MODES_SCRIPT).
    ...(options.terminal
      ? ['tt=$(tty 2>/dev/null) || tt=""', `printf '${HEADER_PREFIX}ok %s %s %s\\n' "$$" "\${20-}" "$tt"`, 'unset st tt']
      : [`printf '${HEADER_PREFIX}ok %s %s\\n' "$$" "\${20-}"`, 'unset st']),
  )
  if (!options.hasStdin && !options.terminal) lines.push('exec </dev/null')
  // sshd closes its own descriptors before the session's shell starts; this covers a login shell
  // or a wrapper on the remote side that leaves one open, as the local executor does for its server.
  lines.push(closeInheritedFds())
  // The limits last, so that nothing of the wrapper itself runs under them.
  if (options.rlimits) lines.push(options.rlimits)
  const shell = shellQuote(options.shell)
  lines.push(
    `if [ "$mode" = file ]; then exec ${shell} --noprofile --norc -c 'eval "$(cat -- "$0" && rm -f -- "$0")"' "$src"; fi`,
    `exec ${shell} --noprofile --norc -c "$src"`,
  )
  return lines.join('\n')
}

/**
 * Prints `stty -a` of an interactive command's terminal (`$1`, the tty its wrapper reported), for
 * `terminalModes`. `exit` after it keeps bash from exec'ing stty in place: the tty is then opened
 * by a forked child, never by this helper's shell, which leads a session of its own without a
 * controlling terminal and would otherwise take a terminal that has none as its own.
 */
export const TERMINAL_MODES_SCRIPT = 'LC_ALL=C stty -a <"$1"; exit $?'

/** Writes stdin to a new private temp file and prints its path (for commands too long for one argument). */
export const UPLOAD_TEXT =
  'umask 077; f=$(mktemp "${TMPDIR:-/tmp}/dsh-bash-ssh.XXXXXXXXXX") || exit 1; cat >"$f" || { rm -f -- "$f"; exit 1; }; printf \'%s\\n\' "$f"'

const script = (name: string) => readScript(new URL(`../scripts/${name}`, import.meta.url))

/**
 * Shell functions shared by the control helpers (scripts/control-functions.sh): a command's
 * processes found by process group (only while the group claim holds: a request that finds the
 * group over or its number reused prints `released reused|empty` and never names it again) and by
 * marker, settled scans, the freezing kill, `terminate` and `wait_empty`.
 */
export const CONTROL_FUNCTIONS = fillScript(script('control-functions.sh'), { MARKER_VARIABLE })

/**
 * A one-shot control helper (scripts/control.sh): `<op> <pgid> <start> <marker> <arg>` with op
 * `count`, `term` (arg: grace ms) or `wait`; `<pgid> <start>` is the group claim (see GroupClaim; `0 0`:
 * marker only). Naps are `read -t` on the channel's stdin: when the client ends
 * the channel (or the connection dies), a `wait` stops at once instead of outliving its purpose.
 */
export const CONTROL_SCRIPT = fillScript(script('control.sh'), { CONTROL_FUNCTIONS })

/**
 * The control agent (scripts/agent.sh): one per connection, started on the first control request,
 * serving `<id> <op> <pgid> <start> <marker> <arg>` lines from stdin with `<id> <answer>` lines on stdout
 * (`count` answers at once; `term` and `wait` run in the background and answer when done). It saves
 * a session channel and two shell starts per request. Naps read a private FIFO with a timeout (no
 * process per nap). Its first line is `@dsh-bash-ssh agent` (anything a login shell printed before
 * it is skipped). When its stdin ends (the client closed it or the connection died) it exits;
 * running waits notice and stop, running terminations go on to their end.
 */
export const AGENT_SCRIPT = fillScript(script('agent.sh'), { CONTROL_FUNCTIONS, HEADER_PREFIX })
