import { readFileSync } from 'node:fs'
import { sleep } from '@deepseek-ai/dsh-bash'
import { GroupClaim } from './group-claim.js'
import { allPids, parseStat, PF_EXITING, PF_KTHREAD, type ProcStat } from './proc.js'

/**
 * One exact-as-possible look at /proc for the processes of one command tree.
 *
 * Why a scan needs care (measured on the 2-core test VM, `test/scan.test.ts`): a process inside
 * `execve` has, for a moment, a fresh memory map whose environment and arguments are not set yet,
 * and a read that opened the old map reads nothing: `/proc/<pid>/environ` (and `cmdline`) read
 * empty although the process is alive and about to run with the marker. 21 of 4259 environ reads
 * of a tree of `setsid sleep` loops were such reads. A `setsid sleep &` escapee passes through two
 * execs just as its shell exits, which is exactly when the executor scans: a scan that trusted that
 * read declared the tree empty, and the escapee survived (issue 19).
 *
 * So every entry is classified, each case an explicit branch, and an entry that cannot be
 * classified yet (`unsure`) is never taken for "not ours": callers look again until none is left.
 */

/** What one /proc entry turned out to be. */
export type Sighting =
  /** The entry vanished during the reads. */
  | { kind: 'gone' }
  /** Exited, not reaped yet (on this VM pid 1 never reaps orphans): runs nothing, holds nothing. */
  | { kind: 'zombie' }
  /** In `exit` (PF_EXITING): it cannot return to user space; it will be a zombie in a moment. */
  | { kind: 'exiting' }
  /** A kernel thread: no environment, never ours. */
  | { kind: 'kernel' }
  /** Its environment cannot be read (another user, a setuid program): not ours to read, nor to signal. */
  | { kind: 'foreign' }
  /** Alive with an empty environment and empty arguments: in the middle of `execve`. Look again. */
  | { kind: 'unsure'; stat: ProcStat }
  /** Alive and readable. `environ` may be empty (a process that cleared its environment). */
  | { kind: 'live'; stat: ProcStat; environ: Buffer }

/**
 * Classifies one /proc entry (see `Sighting`). Without `withEnviron` only the stat is read (enough
 * for a process group: membership is in the stat, exact at every moment) and `environ` is empty.
 */
export function sight(pid: number, withEnviron = true): Sighting {
  if (!withEnviron) {
    const stat = readStatOf(pid)
    if (!stat) return { kind: 'gone' }
    return notLive(stat) ?? { kind: 'live', stat, environ: Buffer.alloc(0) }
  }
  let environ: Buffer
  try {
    environ = readFileSync(`/proc/${pid}/environ`)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'EACCES' || code === 'EPERM') return { kind: 'foreign' }
    // ESRCH: the process has no memory map: a kernel thread, a zombie, or one past exit_mm.
    const stat = readStatOf(pid)
    if (!stat) return { kind: 'gone' }
    return notLive(stat) ?? { kind: 'exiting' }
  }
  const stat = readStatOf(pid)
  if (!stat) return { kind: 'gone' }
  const dead = notLive(stat)
  if (dead) return dead
  if (environ.length > 0) return { kind: 'live', stat, environ }
  // Empty: a cleared environment, or a read that fell into an execve. Arguments are set in the same
  // step as the environment (create_elf_tables), so non-empty arguments mean the exec is over:
  // read the environment once more, it is now what the process runs with.
  let cmdline: Buffer
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`)
  } catch {
    return { kind: 'gone' }
  }
  if (cmdline.length === 0) return { kind: 'unsure', stat }
  try {
    environ = readFileSync(`/proc/${pid}/environ`)
  } catch {
    return { kind: 'gone' }
  }
  return { kind: 'live', stat, environ }
}

/** The sighting of a process that runs no user code any more (or never does), else undefined. */
function notLive(stat: ProcStat): Sighting | undefined {
  if (stat.state === 'Z' || stat.state === 'X') return { kind: 'zombie' }
  if (stat.flags & PF_KTHREAD) return { kind: 'kernel' }
  if (stat.flags & PF_EXITING) return { kind: 'exiting' }
  return undefined
}

function readStatOf(pid: number): ProcStat | undefined {
  try {
    return parseStat(pid, readFileSync(`/proc/${pid}/stat`, 'latin1'))
  } catch {
    return undefined
  }
}

/** Which processes belong to a tree. */
export interface TreeMatch {
  /** `NAME=value` in the environment (the marker). */
  env?: { name: string; value: string }
  /** Members of this process group. */
  pgid?: number
}

/** The result of one scan. */
export interface TreeScan {
  /** Live processes of the tree (zombies, exiting processes excluded). */
  found: Set<number>
  /** Processes caught inside `execve`: they may be of the tree; the scan proves nothing until they are gone. */
  unsure: Set<number>
}

/** One pass of `scanTree`: a `TreeScan`, and what it saw of the group. */
export interface TreePass extends TreeScan {
  /** Members of `match.pgid` it saw, alive or inside an exec (0 without a group). */
  inGroup: number
}

/**
 * One pass over /proc. A process is of the tree when it carries the marker, is in the group, or
 * (closure) its parent is of the tree: a child that cleared its environment and left the group is
 * still found while its parent lives.
 */
export function scanTree(match: TreeMatch): TreePass {
  const needle = match.env ? Buffer.from(`${match.env.name}=${match.env.value}\0`) : undefined
  const found = new Set<number>()
  const unsure = new Set<number>()
  const parents = new Map<number, number>()
  let inGroup = 0
  for (const pid of allPids()) {
    if (pid === process.pid) continue
    const seen = sight(pid, needle !== undefined)
    if (seen.kind === 'unsure') {
      if (match.pgid && seen.stat.pgid === match.pgid) {
        found.add(pid)
        inGroup++
      } else unsure.add(pid)
      parents.set(pid, seen.stat.ppid)
      continue
    }
    if (seen.kind !== 'live') continue
    parents.set(pid, seen.stat.ppid)
    if (match.pgid && seen.stat.pgid === match.pgid) {
      found.add(pid)
      inGroup++
    } else if (needle && hasVariable(seen.environ, needle)) found.add(pid)
  }
  // Children of the tree are of the tree (repeat: grandchildren of a child found this way).
  for (let grew = true; grew; ) {
    grew = false
    for (const [pid, ppid] of parents) {
      if (!found.has(pid) && found.has(ppid)) {
        found.add(pid)
        unsure.delete(pid)
        grew = true
      }
    }
  }
  return { found, unsure, inGroup }
}

/** True when `environ` (NUL-separated) holds `needle` (`NAME=value\0`) as a whole variable. */
function hasVariable(environ: Buffer, needle: Buffer): boolean {
  if (environ.subarray(0, needle.length).equals(needle)) return true
  // Elsewhere it follows the NUL that ends the previous variable.
  const framed = Buffer.concat([Buffer.from([0]), needle])
  const last = environ[environ.length - 1] === 0 ? environ : Buffer.concat([environ, Buffer.from([0])])
  return last.includes(framed)
}


/**
 * How long a process may stay inside execve (`unsure`) before a settled scan stops waiting for it:
 * both this time and `SETTLE_PASSES` passes. An exec takes well under a millisecond of CPU, but one
 * pass over /proc (160 processes) took 0.4–0.7 s at a load average of 30 on the 2-core VM, and one
 * settled scan of a fork-heavy tree over 5 s: a limit of time alone gave up after the first pass,
 * with no second look at a process it had caught inside an exec.
 */
export const SETTLE_LIMIT_MS = 2_000
export const SETTLE_PASSES = 3

/**
 * Scans for one tree, remembering processes that stayed unsure past the limit (an exec stuck on a
 * hung file system, say, which a scan cannot attribute): they are not waited for again while they
 * stay inside that exec, so one such process on the machine costs one wait, not one per scan.
 */
export class TreeScanner {
  private readonly stuck = new Set<number>()
  private readonly env: TreeMatch['env']
  private claim: GroupClaim

  /**
   * `match.env` is matched as given; `match.pgid` (or a later `claimGroup`) only while the group is
   * provably still the command's (group-claim.ts: a freed group number can be a stranger's).
   */
  constructor(
    match: TreeMatch,
    private readonly limitMs = SETTLE_LIMIT_MS,
  ) {
    this.env = match.env
    this.claim = new GroupClaim(match.pgid ?? 0)
  }

  /** Matches group `pgid` from now on (the command's leader was just started: its start time is read now). */
  claimGroup(pgid: number): void {
    this.claim = new GroupClaim(pgid)
  }

  /** The group that is still the command's, or 0 (none given, or released for good). */
  get group(): number {
    return this.claim.held ? this.claim.pgid : 0
  }

  /** What the next pass matches: asks the group's claim (one stat read; it may release the group). */
  nextMatch(): TreeMatch {
    return { env: this.env, pgid: this.claim.current() || undefined }
  }

  /** One pass; `unsure` excludes the processes already given up on. */
  once(): TreeScan {
    const match = this.nextMatch()
    const pass = scanTree(match)
    if (match.pgid) this.claim.observe(pass.inGroup)
    const scan: TreeScan = { found: pass.found, unsure: pass.unsure }
    for (const pid of this.stuck) {
      // Out of its exec now (or gone): not stuck any more; the next time it is caught inside an
      // exec it is waited for again. (Without this a process that re-executes itself without
      // pause, given up on once at load, was missed by every later scan that caught it in execve.)
      if (!scan.unsure.has(pid)) this.stuck.delete(pid)
      else scan.unsure.delete(pid)
    }
    return scan
  }

  /**
   * Scans until every process that the first pass caught inside an exec has been seen outside one
   * (each pass 1 ms after the last; an exec takes well under a millisecond unless the CPU is busy),
   * so that `found` holds every live process of the tree at the first pass. `found` is the union of
   * the passes, less what the last pass no longer sees at all (ended: its pid could be reused): a
   * process found once stays found when a later pass catches it inside its next exec
   * (why: four processes that re-execute without pause are rarely all outside execve in one pass at
   * load, and waiting for such a pass gave up at the limit and missed one, CI 2026-12-03). Its
   * `unsure` is always empty: what was still unsure at the limit is given up on.
   */
  async settled(): Promise<TreeScan> {
    const deadline = performance.now() + this.limitMs
    let scan = this.once()
    let passes = 1
    const found = new Set(scan.found)
    const pending = new Set(scan.unsure)
    for (;;) {
      if (pending.size === 0 || (passes >= SETTLE_PASSES && performance.now() >= deadline)) {
        for (const pid of pending) this.stuck.add(pid)
        // Only what still exists in the last pass (found, or inside its next exec): a pid found
        // earlier that has ended since could be reused by a stranger before the caller signals it.
        for (const pid of found) if (!scan.found.has(pid) && !scan.unsure.has(pid)) found.delete(pid)
        return { found, unsure: new Set() }
      }
      await sleep(1)
      scan = this.once()
      passes++
      for (const pid of scan.found) found.add(pid)
      // Seen outside an exec in this pass (found, not of the tree, or gone): settled.
      for (const pid of pending) if (!scan.unsure.has(pid)) pending.delete(pid)
    }
  }
}
