import { readFileSync } from 'node:fs'
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
export function launcherScript(keep: number, reopen = ''): string {
  return [
    JOIN_CGROUP,
    ...(reopen ? [reopen] : []),
    closeInheritedFds(keep),
    `if [ -n "\${${BASH_ENV_NEXT}+set}" ]; then export BASH_ENV="\$${BASH_ENV_NEXT}"; unset ${BASH_ENV_NEXT}; fi`,
    'exec "$@"',
  ].join('\n')
}

/**
 * For launches that cannot pass descriptors (a pty: node-pty forks with Node's descriptors all
 * close-on-exec): bash code that opens `fds[i]` of process `pid` as fd 3+i, through
 * /proc/<pid>/fd. The magic link reaches the very file the executor opened and checked (not a path
 * looked up again), so a checked source (git's `--bind-fd`) stays the one checked. The access mode
 * is the one the executor opened it with (read from /proc/self/fdinfo). The executor must keep the
 * descriptors open until the command is released.
 */
export function reopenFdsScript(pid: number, fds: readonly number[]): string {
  return fds
    .map((fd, i) => {
      const flags = /^flags:\s*([0-7]+)/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))
      const access = flags ? Number.parseInt(flags[1], 8) & 3 : 0
      const op = access === 1 ? '>>' : access === 2 ? '<>' : '<'
      return `exec ${3 + i}${op}/proc/${pid}/fd/${fd} || exit 125`
    })
    .join('\n')
}
