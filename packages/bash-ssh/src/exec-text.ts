/**
 * The shell text run on the remote side. Everything is handed to sshd as one `exec` request, which
 * sshd runs as `$SHELL -c <text>` with the user's login shell (a POSIX shell is assumed): the text
 * is always `exec <bash> --noprofile --norc -c '<script>' <name> '<arg>'…`, so that the login shell
 * is replaced at once.
 */

/** Quotes a string for a POSIX shell (and bash). */
export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`
}

/** The text sshd is asked to run: `exec <shell> --noprofile --norc -c <script> <name> <args…>`. */
export function execText(shell: string, script: string, name: string, args: readonly string[]): string {
  return ['exec', shellQuote(shell), '--noprofile', '--norc', '-c', shellQuote(script), shellQuote(name), ...args.map(shellQuote)].join(' ')
}
