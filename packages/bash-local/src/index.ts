/**
 * @deepseek-ai/dsh-bash-local — `LocalExecutor`: commands as child processes of this machine.
 *
 * Flow at a glance: the kit calls `launch(spec)` (executor.ts) → the workdir is checked, a script
 * file written when the command is too long for `-c` (prelude.ts), the command line built
 * (command-line.ts) and optionally rewritten by a `LaunchTransform` (transform.ts: the sandbox is
 * one) → a process tracker chosen (tracker.ts: a per-command cgroup, cgroup.ts; else the process
 * group, pgroup.ts / group-claim.ts; else a marker variable, marker.ts) → two pipes from the FIFO
 * pool (pipes.ts) → the launcher helper starts `bash --noprofile --norc -c` in a new session
 * (helper-launch.ts with native/launcher.c or launcher-helper.ts; launch.ts forks in-process; pty.ts
 * for terminals). Kills freeze then kill exactly the tracked processes (exact-kill.ts, scan.ts over
 * /proc via proc.ts).
 */
export { LocalExecutor, MAX_ARGUMENT_BYTES } from './executor.js'
export type { CommandLine } from './command-line.js'
export { localConfigSchema, parseLocalConfig, findExecutable, type LocalExecutorConfig, type LocalExecutorConfigInput } from './config.js'
export type { ContainmentKind, ProcessTracker } from './tracker.js'
export { pidsWithCmdline, settledPidsWithCmdline, readStat, isLive } from './proc.js'
export { type LaunchTransform, type TransformInput, type TransformResult, type TransformedLaunch, type TransformRefusal } from './transform.js'
export { ownV1Directory } from './limits.js'
