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
  /**
   * Live processes of the command, zombies excluded, from one look: quick, but with /proc scans a
   * process caught inside execve is not in it (see scan.ts). For signalling, not for proofs.
   */
  pids(): number[]
  /** Live processes of the command, zombies excluded, looked for until no process of the machine is caught inside execve. */
  livePids(): Promise<number[]>
  /**
   * Sends a signal to every live process of the command (one look), each once; returns the pids it
   * reached for certain (a group signalled as a whole lists only its leader, the command's main process).
   */
  signalAll(signal: NodeJS.Signals): number[]
  /** SIGKILLs everything and resolves once nothing is left, or when the strategy can do no more (exact-kill.ts). */
  killAll(): Promise<void>
  /**
   * True when no live process is left. With /proc scans it answers true only after
   * `CONFIRM_SCANS` consecutive looks found nothing and nothing unsure: call it repeatedly (polling).
   */
  isEmpty(): boolean
  /** Frees the tracker's resources (the cgroup directory). */
  release(): void
}
