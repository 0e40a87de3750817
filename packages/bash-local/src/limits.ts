import { accessSync, constants, existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { BASH_ERROR, codedError, type LimitReached, type ResourceFacts } from '@deepseek-ai/dsh-bash'
import type { CommandLimits } from '@deepseek-ai/dsh-bash-kit'
import { type CgroupManager, mountedPath, removeStaleCgroups } from './cgroup.js'

/**
 * Resource limits per command, and what a command used.
 *
 * Each limit takes the best mechanism this machine offers, chosen once per executor:
 * - `cgroup2`: the command's own cgroup v2 (the one containment made, `cgroup.ts`) when the
 *   controller is enabled for it: `memory.max` with `memory.swap.max` 0, `pids.max`, `cpu.max`;
 * - `cgroup1`: a cgroup of the controller's v1 hierarchy per command (hybrid hosts: systemd's
 *   legacy layout, Docker's v1 hosts), under this process's own cgroup there:
 *   `memory.limit_in_bytes` and `memory.memsw.limit_in_bytes`, `pids.max`, `cpu.cfs_quota_us`;
 * - `rlimit`: memory as RLIMIT_AS (`ulimit -v`, **per process**, address space), processes as
 *   RLIMIT_NPROC (`ulimit -u`, **per user**: every process of that user counts, and root is
 *   exempt); CPU has no rlimit (`none`).
 * The command joins its cgroups in its prelude (join-cgroup.sh), before it runs anything; a cgroup
 * it cannot join or a limit it cannot set ends the launch (exit 125): never a command without its
 * limit. Reaching a limit is read from the kernel's own counters: `oom_kill` (memory.events, v1
 * memory.oom_control) and `max` (pids.events); peak memory from memory.peak (v1
 * max_usage_in_bytes), CPU time from the v2 cgroup's cpu.stat.
 */

export type LimitController = 'memory' | 'pids' | 'cpu'
/** How one limit is enforced (see above). */
export type LimitMechanism = 'cgroup2' | 'cgroup1' | 'rlimit' | 'none'

/** The environment variables of the prelude's join (join-cgroup.sh): a v1 cgroup directory each. */
export const CGROUP1_VARIABLES: Readonly<Record<LimitController, string>> = Object.freeze({
  memory: 'DSH_BASH_CGROUP_MEMORY',
  pids: 'DSH_BASH_CGROUP_PIDS',
  cpu: 'DSH_BASH_CGROUP_CPU',
})
/** The prelude's rlimits: RLIMIT_AS in KiB, RLIMIT_NPROC. */
export const RLIMIT_VARIABLES = Object.freeze({ memory: 'DSH_BASH_RLIMIT_AS', pids: 'DSH_BASH_RLIMIT_NPROC' })

/** Every variable the executor sets for limits: always set (empty when unused), so a caller's `env` cannot. */
export const LIMIT_VARIABLES = [...Object.values(CGROUP1_VARIABLES), ...Object.values(RLIMIT_VARIABLES)]

const CFS_PERIOD_US = 100_000

/** A v1 hierarchy's directory for this executor: `<mount>/<own path>/dsh-bash-<pid>-<rand>`. */
interface V1Root {
  controller: LimitController
  dir: string
}

/** The executor's choice per limit, and its v1 directories. */
export class ResourceControl {
  private seq = 0

  private constructor(
    readonly limits: CommandLimits,
    /** How each configured limit is enforced (`none` also for a limit that is not set). */
    readonly mechanisms: Readonly<Record<LimitController, LimitMechanism>>,
    /** Controllers enabled for the v2 command cgroups (measuring included). */
    private readonly v2: ReadonlySet<LimitController>,
    private readonly v1: ReadonlyMap<LimitController, V1Root>,
    /** Why a limit falls back to rlimits or is not enforced; empty when every limit is held by a cgroup. */
    readonly note: string,
  ) {}

  /**
   * The limits this executor would enforce if configured (its capabilities' `limits`): memory
   * always (RLIMIT_AS at worst); processes by a cgroup or, for a user other than root (whom the
   * kernel exempts from RLIMIT_NPROC), the rlimit; CPU only by a cgroup (v2 enabled for the
   * commands, or a v1 hierarchy of this process that it can write).
   */
  enforceable(): ('memory' | 'pids' | 'cpu')[] {
    const cgroup = (controller: LimitController) => {
      if (this.v2.has(controller) || this.v1.has(controller)) return true
      const own = ownV1Directory(controller)
      if (!own) return false
      try {
        accessSync(own, constants.W_OK)
        return true
      } catch {
        return false
      }
    }
    const limits: ('memory' | 'pids' | 'cpu')[] = ['memory']
    if (cgroup('pids') || process.getuid?.() !== 0) limits.push('pids')
    if (cgroup('cpu')) limits.push('cpu')
    return limits
  }

  /**
   * Chooses the mechanisms for `limits` (and for measuring peak memory). `cgroups` is the v2
   * containment's manager, when there is one. Creates the executor's v1 directories it uses.
   */
  static create(limits: CommandLimits, cgroups: CgroupManager | undefined, label = `${process.pid}-${Math.random().toString(36).slice(2, 8)}`): ResourceControl {
    const wanted: LimitController[] = []
    if (limits.memory !== undefined) wanted.push('memory')
    if (limits.pids !== undefined) wanted.push('pids')
    if (limits.cpu !== undefined) wanted.push('cpu')
    // Memory is always wanted where a controller has it: the peak is measured for every command.
    const v2 = new Set<LimitController>(cgroups ? cgroups.enableControllers(['memory', 'pids', 'cpu']) : [])
    const v1 = new Map<LimitController, V1Root>()
    const notes: string[] = []
    for (const controller of ['memory', 'pids', 'cpu'] as const) {
      if (v2.has(controller)) continue
      if (controller !== 'memory' && !wanted.includes(controller)) continue
      const made = v1Root(controller, label)
      if (made.root) v1.set(controller, made.root)
      else if (wanted.includes(controller)) notes.push(`no ${controller} cgroup (${made.reason})`)
    }
    const mechanism = (controller: LimitController): LimitMechanism => {
      if (!wanted.includes(controller)) return 'none'
      if (v2.has(controller)) return 'cgroup2'
      if (v1.has(controller)) return 'cgroup1'
      return controller === 'cpu' ? 'none' : 'rlimit'
    }
    const mechanisms = { memory: mechanism('memory'), pids: mechanism('pids'), cpu: mechanism('cpu') }
    if (mechanisms.memory === 'rlimit') notes.push('memory is limited per process (RLIMIT_AS)')
    if (mechanisms.pids === 'rlimit') notes.push(`processes are limited per user (RLIMIT_NPROC)${process.getuid?.() === 0 ? ', which root is exempt from' : ''}`)
    if (mechanisms.cpu === 'none' && wanted.includes('cpu')) notes.push('the CPU limit is not enforced')
    return new ResourceControl(limits, mechanisms, v2, v1, notes.join('; '))
  }

  /**
   * The limits of one command: its v1 cgroups made and limited, the v2 cgroup `v2Dir` (the
   * containment's, when there is one) limited, and the environment that makes the prelude join
   * them and set the rlimits. Throws when a limit cannot be set: nothing then runs.
   */
  forCommand(label: string, v2Dir: string | undefined): CommandResources {
    const made: string[] = []
    try {
      const env: Record<string, string> = Object.fromEntries(LIMIT_VARIABLES.map((name) => [name, '']))
      const v1Dirs = new Map<LimitController, string>()
      for (const [controller, root] of this.v1) {
        const dir = join(root.dir, `${label}-${++this.seq}`)
        mkdirSync(dir)
        made.push(dir)
        v1Dirs.set(controller, dir)
        env[CGROUP1_VARIABLES[controller]] = dir
      }
      const { memory, pids, cpu } = this.limits
      if (v2Dir && memory !== undefined && this.v2.has('memory')) {
        write(v2Dir, 'memory.max', memory)
        if (existsSync(join(v2Dir, 'memory.swap.max'))) write(v2Dir, 'memory.swap.max', 0)
      }
      if (v2Dir && pids !== undefined && this.v2.has('pids')) write(v2Dir, 'pids.max', pids)
      if (v2Dir && cpu !== undefined && this.v2.has('cpu')) write(v2Dir, 'cpu.max', `${Math.max(1000, Math.round(cpu * CFS_PERIOD_US))} ${CFS_PERIOD_US}`)
      const memory1 = v1Dirs.get('memory')
      if (memory1 && memory !== undefined) {
        write(memory1, 'memory.limit_in_bytes', memory)
        // Swap accounting, where the kernel has it: the same bound on memory plus swap (no swap beyond the limit).
        if (existsSync(join(memory1, 'memory.memsw.limit_in_bytes'))) write(memory1, 'memory.memsw.limit_in_bytes', memory)
      }
      const pids1 = v1Dirs.get('pids')
      if (pids1 && pids !== undefined) write(pids1, 'pids.max', pids)
      const cpu1 = v1Dirs.get('cpu')
      if (cpu1 && cpu !== undefined) {
        write(cpu1, 'cpu.cfs_period_us', CFS_PERIOD_US)
        write(cpu1, 'cpu.cfs_quota_us', Math.max(1000, Math.round(cpu * CFS_PERIOD_US)))
      }
      if (this.mechanisms.memory === 'rlimit') env[RLIMIT_VARIABLES.memory] = String(Math.max(1, Math.floor(memory! / 1024)))
      if (this.mechanisms.pids === 'rlimit') env[RLIMIT_VARIABLES.pids] = String(pids)
      return new CommandResources(env, this.limits, v2Dir, this.v2, v1Dirs)
    } catch (error) {
      for (const dir of made.reverse()) safeRmdir(dir)
      throw codedError(BASH_ERROR.startFailed, `cannot set the command's resource limits: ${(error as Error).message}`, { cause: error })
    }
  }

  /** Removes the executor's v1 directories, with any command directory a late exit left behind (every command must be gone). */
  dispose(): void {
    for (const root of this.v1.values()) {
      try {
        for (const child of readdirSync(root.dir, { withFileTypes: true })) if (child.isDirectory()) safeRmdir(join(root.dir, child.name))
      } catch {
        // Gone already.
      }
      safeRmdir(root.dir)
    }
  }
}

/** One command's cgroups for limits and measuring; read `facts` once its processes are gone, then `release`. */
export class CommandResources {
  constructor(
    /** Variables the command's prelude reads (join-cgroup.sh). */
    readonly env: Readonly<Record<string, string>>,
    private readonly limits: CommandLimits,
    private readonly v2Dir: string | undefined,
    private readonly v2: ReadonlySet<LimitController>,
    private readonly v1Dirs: ReadonlyMap<LimitController, string>,
  ) {}

  /** What the command used and the limits it reached, from the kernel's counters. */
  facts(): ResourceFacts {
    const facts: ResourceFacts = {}
    const reached: LimitReached = {}
    const v2 = this.v2Dir
    if (v2) {
      const usec = field(read(join(v2, 'cpu.stat')), 'usage_usec')
      if (usec !== undefined) facts.cpuMs = Math.round(usec / 1000)
    }
    // A limit counts as reached only when the kill (or refusal) came from this command's own limit:
    // an OOM kill while its usage hit its own maximum (not the machine's or an enclosing cgroup's).
    const memory1 = this.v1Dirs.get('memory')
    if (v2 && this.v2.has('memory')) {
      const peak = read(join(v2, 'memory.peak')).trim()
      if (/^\d+$/.test(peak)) facts.peakMemoryBytes = Number(peak)
      const events = read(join(v2, 'memory.events'))
      if (this.limits.memory !== undefined && (field(events, 'oom_kill') ?? 0) > 0 && (field(events, 'max') ?? 0) > 0) reached.memoryBytes = this.limits.memory
    } else if (memory1) {
      const peak = read(join(memory1, 'memory.max_usage_in_bytes')).trim()
      if (/^\d+$/.test(peak)) facts.peakMemoryBytes = Number(peak)
      const kills = field(read(join(memory1, 'memory.oom_control')), 'oom_kill') ?? 0
      // v1 has no event for "the limit was hit" that this kernel keeps (memory.failcnt stayed 0 at an
      // OOM kill at the limit, measured on 6.18): the peak standing at the limit says it.
      const limit = this.limits.memory
      if (limit !== undefined && kills > 0 && facts.peakMemoryBytes !== undefined && facts.peakMemoryBytes >= limit - Math.max(2 ** 20, limit / 100)) reached.memoryBytes = limit
    }
    // A refused fork while the command's own count stood at its limit (pids.peak where the kernel has it).
    const pidsDir = v2 && this.v2.has('pids') ? v2 : this.v1Dirs.get('pids')
    if (pidsDir && this.limits.pids !== undefined && (field(read(join(pidsDir, 'pids.events')), 'max') ?? 0) > 0) {
      const peak = read(join(pidsDir, 'pids.peak')).trim()
      if (!/^\d+$/.test(peak) || Number(peak) >= this.limits.pids) reached.processes = this.limits.pids
    }
    if (Object.keys(reached).length > 0) facts.limitReached = reached
    return facts
  }

  /** Removes the command's v1 cgroups (its v2 cgroup is the tracker's). */
  release(): void {
    for (const dir of this.v1Dirs.values()) safeRmdir(dir)
  }
}

/**
 * Makes this executor's directory in `controller`'s v1 hierarchy, under this process's own cgroup
 * there; removes the empty ones dead executors left. Undefined (with the reason) where there is no
 * such hierarchy or it is not writable.
 */
function v1Root(controller: LimitController, label: string): { root?: V1Root; reason?: string } {
  const own = ownV1Directory(controller)
  if (!own) return { reason: `no cgroup v1 ${controller} hierarchy` }
  removeStaleCgroups(own)
  const dir = join(own, `dsh-bash-${label}`)
  try {
    mkdirSync(dir)
  } catch (error) {
    return { reason: `cannot create a cgroup under ${own}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}` }
  }
  return { root: { controller, dir } }
}

/** This process's directory in the v1 hierarchy of `controller` (mountinfo + /proc/self/cgroup); undefined when none is mounted. */
export function ownV1Directory(controller: LimitController, mountinfo?: string, membership?: string): string | undefined {
  try {
    mountinfo ??= readFileSync('/proc/self/mountinfo', 'utf8')
    membership ??= readFileSync('/proc/self/cgroup', 'utf8')
  } catch {
    return undefined
  }
  // `4:memory:/path`, `1:cpu,cpuacct:/path`.
  const line = membership.split('\n').find((l) => {
    const parts = l.split(':')
    return parts.length >= 3 && parts[1].split(',').includes(controller)
  })
  if (!line) return undefined
  const path = line.split(':').slice(2).join(':')
  return mountedPath(mountinfo, path, (type, options) => type === 'cgroup' && options.includes(controller))
}

function write(dir: string, file: string, value: number | string): void {
  writeFileSync(join(dir, file), String(value))
}

function read(path: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return ''
  }
}

/** The number after `name ` on its own line of a flat-keyed file (`oom_kill 2`), or undefined. */
function field(text: string, name: string): number | undefined {
  const match = new RegExp(`^${name} (\\d+)$`, 'm').exec(text)
  return match ? Number(match[1]) : undefined
}

function safeRmdir(dir: string): void {
  try {
    rmdirSync(dir)
  } catch {
    // Not empty yet, or gone.
  }
}
