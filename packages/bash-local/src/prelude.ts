import { BASH_ENV_NEXT_VARIABLE as BASH_ENV_NEXT, CGROUP_VARIABLE, closeInheritedFds } from '@deepseek-ai/dsh-bash-kit'

/**
 * The bash code that runs before a command, in the command's own shell (bash's BASH_ENV) or in the
 * launcher that execs a wrapper (bwrap). Bash, not /bin/sh: dash cannot name a descriptor above 9.
 */

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

