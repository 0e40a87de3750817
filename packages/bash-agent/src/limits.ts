/**
 * Per-process rlimits the serving agent sets in every command it starts (`serve --rlimit-as=…
 * --rlimit-nproc=…`, docs/agent-protocol.md): hard and soft, just before the command's shell runs,
 * never on the agent itself. Where a far side has no cgroup of its own to give (an SSH host), these
 * are what bounds a command. Each field absent: no limit of that kind.
 */
export interface AgentLimits {
  /** RLIMIT_AS in bytes: each process's address space (not memory used; per process, not per command). */
  addressSpaceBytes?: number
  /** RLIMIT_NPROC: processes of the *user* at once (every process of that uid counts; root is exempt). */
  processes?: number
}

/** The `serve` options for `limits` (none when empty); a value that is not a positive integer is refused. */
export function serveLimitArgs(limits: AgentLimits | undefined): string[] {
  const args: string[] = []
  for (const [option, value] of [
    ['--rlimit-as', limits?.addressSpaceBytes],
    ['--rlimit-nproc', limits?.processes],
  ] as const) {
    if (value === undefined) continue
    if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`${option} must be a positive integer, got ${value}`)
    args.push(`${option}=${value}`)
  }
  return args
}
