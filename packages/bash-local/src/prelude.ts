import { BASH_ENV_NEXT_VARIABLE as BASH_ENV_NEXT, CGROUP_VARIABLE } from '@deepseek-ai/dsh-bash-kit'

/**
 * The bash code that runs before a command, in the command's own shell (bash's BASH_ENV) or in the
 * launcher that execs a wrapper (bwrap). Bash, not /bin/sh: dash cannot name a descriptor above 9.
 */

/**
 * Closes every descriptor but 0, 1, 2 and `3 … 2+keep`. Node marks what it opens close-on-exec and
 * closes only that; whatever the server inherited without the flag (`exec 200>>log; exec dsh-bash …`)
 * would otherwise reach every command. The list is read first (the glob opens the directory on a
 * descriptor of its own, closed again before the loop), and closing a descriptor that is not open
 * is no error in bash, so no redirection is needed (one would save stderr on a descriptor the loop
 * could then close). Without /proc nothing is closed (documented limit).
 */
export function closeInheritedFds(keep = 0): string {
  const kept = ['0', '1', '2', ...Array.from({ length: keep }, (_, i) => String(3 + i))].join('|')
  return [
    '__dsh_fds=(/proc/self/fd/*)',
    `for __dsh_fd in "\${__dsh_fds[@]##*/}"; do case $__dsh_fd in ${kept}|''|*[!0-9]*) ;; *) exec {__dsh_fd}>&- ;; esac; done`,
    'unset __dsh_fd __dsh_fds',
  ].join('\n')
}

/** Joins the command's cgroup when the executor set one, before anything runs, so nothing it starts escapes the kill. */
const JOIN_CGROUP = [
  `if [ -n "\${${CGROUP_VARIABLE}-}" ]; then`,
  `  if ! echo 0 2>/dev/null >"\$${CGROUP_VARIABLE}/cgroup.procs"; then echo "dsh-bash: cannot join cgroup \$${CGROUP_VARIABLE}" >&2; exit 125; fi`,
  'fi',
  `unset ${CGROUP_VARIABLE}`,
].join('\n')

/**
 * The BASH_ENV file of every command whose shell is bash itself: join the cgroup, close inherited
 * descriptors, then source a trusted caller's BASH_ENV (carried in DSH_BASH_ENV_NEXT).
 */
export function preludeScript(): string {
  return [
    "# dsh-bash: runs in the command's shell before the command (see @deepseek-ai/dsh-bash-local prelude.ts).",
    JOIN_CGROUP,
    closeInheritedFds(),
    `if [ -n "\${${BASH_ENV_NEXT}+set}" ]; then export BASH_ENV="\$${BASH_ENV_NEXT}"; unset ${BASH_ENV_NEXT}; . "\$BASH_ENV"; else unset BASH_ENV; fi`,
    '',
  ].join('\n')
}

/**
 * The `bash -c` script that starts a wrapper (`"$@"`, e.g. bwrap): join the cgroup, close inherited
 * descriptors except the wrapper's own `keep` (fd 3, 4, …: bwrap's status file, which bwrap does not
 * pass on to the command), give back a trusted caller's BASH_ENV (moved aside so that this launcher,
 * which runs outside any sandbox, does not source it), exec.
 */
export function launcherScript(keep: number): string {
  return [
    JOIN_CGROUP,
    closeInheritedFds(keep),
    `if [ -n "\${${BASH_ENV_NEXT}+set}" ]; then export BASH_ENV="\$${BASH_ENV_NEXT}"; unset ${BASH_ENV_NEXT}; fi`,
    'exec "$@"',
  ].join('\n')
}
