import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { CGROUP_VARIABLE } from '@deepseek-ai/dsh-bash-kit'
import { signalEach } from './proc.js'
import type { ProcessTracker } from './tracker.js'

/**
 * Finds this process's cgroup v2 directory: the cgroup2 mount (from mountinfo) joined with the
 * path in the `0::` line of /proc/self/cgroup. Undefined when there is no cgroup v2.
 */
export function ownCgroupDirectory(): string | undefined {
  let mountinfo: string
  let membership: string
  try {
    mountinfo = readFileSync('/proc/self/mountinfo', 'utf8')
    membership = readFileSync('/proc/self/cgroup', 'utf8')
  } catch {
    return undefined
  }
  const line = membership.split('\n').find((l) => l.startsWith('0::'))
  if (!line) return undefined
  return mountedPath(mountinfo, line.slice(3), (type) => type === 'cgroup2')
}

/**
 * Where a cgroup `path` (relative to its hierarchy's top, as /proc/self/cgroup gives it) is mounted:
 * the first mountinfo entry whose file system type and super options `mount` accepts and whose
 * root contains the path. Undefined when none does.
 */
export function mountedPath(mountinfo: string, path: string, mount: (type: string, options: string[]) => boolean): string | undefined {
  for (const entry of mountinfo.split('\n')) {
    const [left, right] = entry.split(' - ')
    if (!right) continue
    const [type, , options = ''] = right.split(' ')
    if (!mount(type, options.split(','))) continue
    const fields = left.split(' ')
    const root = unescapeMount(fields[3])
    const mountPoint = unescapeMount(fields[4])
    // The mount shows the hierarchy from `root`; our path is relative to the hierarchy's top.
    if (!path.startsWith(root)) continue
    return join(mountPoint, path.slice(root.length))
  }
  return undefined
}

export function unescapeMount(text: string): string {
  return text.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)))
}

/**
 * The executor's own cgroup (`<own>/dsh-bash-<pid>-<n>`), with one child cgroup per command.
 * Created only when a probe proves that a process can really join a child cgroup here (cgroup v2
 * mounted and writable, no "no internal processes" conflict) and that `cgroup.kill` exists.
 */
export class CgroupManager {
  private seq = 0

  private constructor(readonly root: string) {}

  /** Returns a manager, or undefined (with the reason) when cgroups cannot be used here. */
  static create(): { manager?: CgroupManager; reason?: string } {
    const own = ownCgroupDirectory()
    if (!own) return { reason: 'no cgroup v2 hierarchy is mounted' }
    removeStaleCgroups(own)
    const root = join(own, `dsh-bash-${process.pid}-${Math.random().toString(36).slice(2, 8)}`)
    try {
      mkdirSync(root)
    } catch (error) {
      return { reason: `cannot create a cgroup under ${own}: ${(error as Error).message}` }
    }
    const probe = join(root, 'probe')
    try {
      mkdirSync(probe)
      if (!existsSync(join(probe, 'cgroup.kill'))) throw new Error('cgroup.kill is not available (kernel older than 5.14)')
      const result = spawnSync('/bin/sh', ['-c', 'echo 0 > "$1/cgroup.procs"', 'sh', probe], { stdio: 'ignore' })
      if (result.status !== 0) throw new Error('a process cannot join a child cgroup here')
    } catch (error) {
      safeRmdir(probe)
      safeRmdir(root)
      return { reason: (error as Error).message }
    }
    safeRmdir(probe)
    return { manager: new CgroupManager(root) }
  }

  /** A new, empty cgroup for one command. */
  tracker(label: string): CgroupTracker {
    const dir = join(this.root, `${label}-${++this.seq}`)
    mkdirSync(dir)
    return new CgroupTracker(dir)
  }

  /**
   * Enables `wanted` controllers (those the kernel offers here) for the command cgroups: in the
   * parent's `cgroup.subtree_control` (refused while the parent holds processes of its own, as
   * cgroup v2's "no internal processes" rule says, unless it is the root; then they count only if
   * they are enabled there already, as a delegating systemd does) and in the executor's. Returns
   * the controllers the command cgroups have.
   */
  enableControllers<C extends string>(wanted: readonly C[]): C[] {
    const parent = dirname(this.root)
    const offered = (dir: string) => readWords(join(dir, 'cgroup.controllers'))
    for (const controller of wanted) {
      if (!offered(parent).includes(controller)) continue
      try {
        writeFileSync(join(parent, 'cgroup.subtree_control'), `+${controller}`)
      } catch {
        // Not ours to enable (processes in the parent): enabled there already, or not at all.
      }
    }
    for (const controller of wanted) {
      if (!offered(this.root).includes(controller)) continue
      try {
        writeFileSync(join(this.root, 'cgroup.subtree_control'), `+${controller}`)
      } catch {
        // Checked below.
      }
    }
    const enabled = readWords(join(this.root, 'cgroup.subtree_control'))
    return wanted.filter((controller) => enabled.includes(controller))
  }

  /** Removes the executor's cgroup (all commands must be gone). */
  dispose(): void {
    safeRmdir(this.root)
  }
}

export class CgroupTracker implements ProcessTracker {
  readonly kind = 'cgroup' as const
  readonly env: Readonly<Record<string, string>>

  constructor(readonly dir: string) {
    this.env = { [CGROUP_VARIABLE]: dir }
  }

  attach(): void {
    // The command joins by itself, before it runs anything (see the shell prelude).
  }

  pids(): number[] {
    let text: string
    try {
      text = readFileSync(join(this.dir, 'cgroup.procs'), 'utf8')
    } catch {
      return []
    }
    // cgroup.procs lists no zombies: an exited process leaves it at once.
    return text
      .split('\n')
      .filter(Boolean)
      .map(Number)
  }

  async livePids(): Promise<number[]> {
    // Membership is the kernel's own bookkeeping: exact at every moment, nothing to settle.
    return this.pids()
  }

  signalAll(signal: NodeJS.Signals): number[] {
    const pids = this.pids()
    signalEach(pids, signal)
    return pids
  }

  async killAll(): Promise<void> {
    try {
      // The kernel kills every member, including ones forked while this runs.
      writeFileSync(join(this.dir, 'cgroup.kill'), '1')
    } catch {
      signalEach(this.pids(), 'SIGKILL')
    }
  }

  isEmpty(): boolean {
    try {
      return /^populated 0$/m.test(readFileSync(join(this.dir, 'cgroup.events'), 'utf8'))
    } catch {
      return true
    }
  }

  release(): void {
    safeRmdir(this.dir)
  }
}

/** Empty cgroups of a dead owner older than this are garbage (younger ones may be another namespace's, just created). */
const STALE_AFTER_MS = 60_000

/**
 * Removes the empty cgroups left by executors whose process died without disposing (a crash, a
 * killed test worker): `<own>/dsh-bash-<dead pid>-*` and their empty command cgroups. A cgroup that
 * still holds a process is never touched (rmdir refuses it): its processes are not ours to kill.
 */
export function removeStaleCgroups(own: string): void {
  let entries: string[]
  try {
    entries = readdirSync(own)
  } catch {
    return
  }
  const now = Date.now()
  for (const name of entries) {
    const match = /^dsh-bash-(\d+)-[a-z0-9]+$/.exec(name)
    if (!match || Number(match[1]) === process.pid || existsSync(`/proc/${match[1]}`)) continue
    const root = join(own, name)
    try {
      if (now - statSync(root).mtimeMs < STALE_AFTER_MS) continue
      for (const child of readdirSync(root, { withFileTypes: true })) {
        if (child.isDirectory()) safeRmdir(join(root, child.name))
      }
    } catch {
      continue
    }
    safeRmdir(root)
  }
}

function readWords(path: string): string[] {
  try {
    return readFileSync(path, 'utf8').trim().split(/\s+/)
  } catch {
    return []
  }
}

function safeRmdir(dir: string): void {
  try {
    rmdirSync(dir)
  } catch {
    // Not empty yet (a process is still exiting) or gone: nothing more to do.
  }
}
