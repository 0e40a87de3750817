/**
 * How the executor finds every process a command started, so that it can count and kill them.
 * Three strategies, best first:
 *  - cgroup: a cgroup v2 per command; the kernel tracks membership and `cgroup.kill` kills all of
 *    it atomically, even processes that called setsid, double-forked or cleared their environment.
 *  - marker: an environment variable set on the command and inherited by descendants, found via
 *    /proc; sees setsid/nohup escapees but not a process that clears or replaces its environment.
 *  - pgroup: the process group of the command's session; an escapee with its own group is lost.
 */
export type ContainmentKind = 'cgroup' | 'marker' | 'pgroup'

export interface ProcessTracker {
  readonly kind: ContainmentKind
  /** Variables to add to the command's environment. */
  readonly env: Readonly<Record<string, string>>
  /** Called once the main process exists. */
  attach(pid: number): void
  /** Live processes of the command, zombies excluded. */
  pids(): number[]
  /** Sends a signal to every live process of the command. */
  signalAll(signal: NodeJS.Signals): void
  /** SIGKILLs everything, as atomically as the strategy allows. */
  killAll(): void
  /** True when no live process is left. */
  isEmpty(): boolean
  /** Frees the tracker's resources (the cgroup directory). */
  release(): void
}
