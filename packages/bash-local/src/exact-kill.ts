import { sleep } from '@deepseek-ai/dsh-bash'
import { readStat, signalPid } from './proc.js'
import type { TreeScan } from './scan.js'

/** Consecutive settled scans that must find nothing before a tree is called empty. */
export const CONFIRM_SCANS = 2

/**
 * Bounds the whole kill; the caller goes on waiting for the tree to empty afterwards. It is spent
 * only when both have run out, the time and the scans: under load a scan is slow, and time alone
 * stopped the kill before it could work. At a load average of 35 on the 2-core VM one settled scan
 * of a fork-heavy tree took over 5 s; a kill bounded by 5 s gave up after that first scan with
 * nothing frozen, the tree forked on, and the task whose kill it was never ended
 * (containment-stress, marker). Counted in scans, the kill does the same work whatever the load.
 */
export interface KillLimit {
  ms: number
  scans: number
}

const KILL_LIMIT: KillLimit = { ms: 5_000, scans: 20 }


/** What `freezeAndKill` needs to know about a tree. */
export interface KillTarget {
  /** A settled scan (see `TreeScanner.settled`). */
  scan(): Promise<TreeScan>
  /** Its process group, also signalled as a whole (atomic for its members); 0 for none. */
  pgid: number
}

/**
 * SIGKILLs every process of a tree that is found by scanning /proc, leaving none alive:
 *
 * 1. Freeze: SIGSTOP each process a settled scan found and their group (while one of them is in
 *    it), rescan, SIGSTOP what is new, until a settled scan finds nothing new (the fixpoint). A
 *    process with SIGSTOP pending cannot fork: the kernel checks for pending signals under the same lock that makes a new child visible, so a
 *    fork either restarts (no child) or its child is already in /proc for the next scan; and a
 *    child caught inside execve is waited for by the settled scan. Killing without the freeze
 *    raced a tree that forks faster than a scan: each round found and killed some, while the rest
 *    forked children that the next round had to find again.
 * 2. SIGKILL everything the last scan found (all of it frozen; a stopped process dies from SIGKILL
 *    at once); a frozen pid it no longer finds has ended and gets SIGCONT, never SIGKILL.
 * 3. Confirm: SIGKILL whatever a settled scan still finds, until `CONFIRM_SCANS` consecutive
 *    settled scans find nothing.
 *
 * Resolves true when the tree was confirmed empty, false when the limit ran out first.
 */
export async function freezeAndKill(target: KillTarget, limit: KillLimit = KILL_LIMIT): Promise<boolean> {
  const deadline = performance.now() + limit.ms
  let scans = 0
  const scan = () => (scans++, target.scan())
  const spent = () => scans >= limit.scans && performance.now() >= deadline
  const frozen = new Set<number>()
  // The group is signalled only while a process the latest scan found is in it: a group whose
  // members are all gone leaves its number free, and a stranger's new session can take it (pid_max
  // is 32768 here; fork-heavy load wraps it in seconds). Signalled before the first scan, a reused
  // number would have stopped a stranger's whole group.
  const group = (signal: NodeJS.Signals, scan: TreeScan) => {
    if (!target.pgid || !hasGroupMember(scan, target.pgid)) return
    try {
      process.kill(-target.pgid, signal)
    } catch {
      // ESRCH: no member left.
    }
  }
  let last = await scan()
  for (;;) {
    group('SIGSTOP', last)
    const fresh = [...last.found].filter((pid) => !frozen.has(pid))
    if (fresh.length === 0 || spent()) break
    for (const pid of fresh) {
      signalPid(pid, 'SIGSTOP')
      frozen.add(pid)
    }
    last = await scan()
  }
  // What the last scan still finds, not every pid frozen since the start: a stopped process of the
  // tree stays in every scan, so a frozen pid missing from the last one has ended (killed by someone
  // else, or gone before its SIGSTOP landed) and its number may be a stranger's by now. Those get
  // SIGCONT instead: if a stranger did take the number in the moment between a scan and its
  // SIGSTOP, it runs on.
  group('SIGKILL', last)
  for (const pid of last.found) signalPid(pid, 'SIGKILL')
  for (const pid of frozen) if (!last.found.has(pid)) signalPid(pid, 'SIGCONT')
  let empty = 0
  let pause = 1
  while (empty < CONFIRM_SCANS) {
    last = await scan()
    if (last.found.size === 0) {
      empty++
      continue
    }
    empty = 0
    if (spent()) return false
    group('SIGKILL', last)
    for (const pid of last.found) signalPid(pid, 'SIGKILL')
    // A killed process is found until it is a zombie: give the kernel a moment, then a longer one.
    await sleep(pause)
    pause = Math.min(pause * 2, 50)
  }
  return true
}

/** True when a process the scan found is in group `pgid` (its leader first: one lookup in the common case). */
function hasGroupMember(scan: TreeScan, pgid: number): boolean {
  if (scan.found.has(pgid)) return true
  for (const pid of scan.found) if (readStat(pid)?.pgid === pgid) return true
  return false
}
