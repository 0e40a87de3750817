import { CGROUP1_VARIABLES, RLIMIT_VARIABLES } from './limits.js'
import { BASH_ENV_NEXT_VARIABLE as BASH_ENV_NEXT, CGROUP_VARIABLE, closeInheritedFds, fillScript, readScript } from '@deepseek-ai/dsh-bash-kit'

/**
 * The bash code that runs before a command, in the command's own shell (bash's BASH_ENV) or in the
 * launcher that execs a wrapper (bwrap). Bash, not /bin/sh: dash cannot name a descriptor above 9.
 * The code is in scripts/ (join-cgroup.sh, prelude.sh, launcher.sh), checked by `bash -n` in a test.
 */

const script = (name: string, options?: { keepComments?: boolean }) => readScript(new URL(`../scripts/${name}`, import.meta.url), options)

/** Joins the command's cgroup when the executor set one, before anything runs, so nothing it starts escapes the kill. */
const JOIN_CGROUP = fillScript(script('join-cgroup.sh'), {
  CGROUP_VARIABLE,
  CGROUP_MEMORY: CGROUP1_VARIABLES.memory,
  CGROUP_PIDS: CGROUP1_VARIABLES.pids,
  CGROUP_CPU: CGROUP1_VARIABLES.cpu,
  RLIMIT_AS: RLIMIT_VARIABLES.memory,
  RLIMIT_NPROC: RLIMIT_VARIABLES.pids,
})
/** The prelude file's first line says what it is: its comments are part of it. */
const PRELUDE = script('prelude.sh', { keepComments: true })
const LAUNCHER = script('launcher.sh')

/**
 * The BASH_ENV file of every command whose shell is bash itself: join the cgroup, close inherited
 * descriptors, then source a trusted caller's BASH_ENV (carried in DSH_BASH_ENV_NEXT).
 */
export function preludeScript(): string {
  return fillScript(PRELUDE, { JOIN_CGROUP, CLOSE_INHERITED_FDS: closeInheritedFds(), BASH_ENV_NEXT })
}

/**
 * The `bash -c` script that starts a wrapper (`"$@"`, e.g. bwrap): join the cgroup, close inherited
 * descriptors except the wrapper's own `keep` (fd 3, 4, …: bwrap's status file, which bwrap does not
 * pass on to the command), give back a trusted caller's BASH_ENV (moved aside so that this launcher,
 * which runs outside any sandbox, does not source it), exec.
 */
export function launcherScript(keep: number): string {
  return fillScript(LAUNCHER, { JOIN_CGROUP, CLOSE_INHERITED_FDS: closeInheritedFds(keep), BASH_ENV_NEXT })
}
