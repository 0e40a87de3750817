import { readdirSync, readFileSync } from 'node:fs'

/** Facts about one process, read from /proc/<pid>/stat. */
export interface ProcStat {
  pid: number
  ppid: number
  pgid: number
  sid: number
  /** One letter: R, S, D, Z, T, … */
  state: string
  /** The kernel's PF_* flags (PF_EXITING 0x4, PF_KTHREAD 0x200000). */
  flags: number
  /**
   * When the process started, in clock ticks since boot (field 22). With the pid it names one
   * process: a reused pid has a later start. Never a wall-clock time.
   */
  start: number
}

/** PF_EXITING and PF_KTHREAD from include/linux/sched.h (the `flags` field of /proc/<pid>/stat). */
export const PF_EXITING = 0x4
export const PF_KTHREAD = 0x200000

/** True when /proc is there to be read (Linux). */
export function hasProc(): boolean {
  try {
    readFileSync('/proc/self/stat')
    return true
  } catch {
    return false
  }
}

/** Reads /proc/<pid>/stat; undefined when the process is gone. */
export function readStat(pid: number): ProcStat | undefined {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'latin1')
  } catch {
    return undefined
  }
  return parseStat(pid, text)
}

/** Parses the text of /proc/<pid>/stat. */
export function parseStat(pid: number, text: string): ProcStat {
  // The command name (field 2) is in parentheses and may itself contain spaces or parentheses.
  const close = text.lastIndexOf(')')
  const rest = text.slice(close + 2).split(' ')
  // Field N of the man page is rest[N - 3]: state is field 3, starttime field 22.
  return { pid, state: rest[0], ppid: Number(rest[1]), pgid: Number(rest[2]), sid: Number(rest[3]), flags: Number(rest[6]), start: Number(rest[19]) }
}

/** True when the process exists and is not a zombie. */
export function isLive(pid: number): boolean {
  const stat = readStat(pid)
  return stat !== undefined && stat.state !== 'Z' && stat.state !== 'X'
}

/** All numeric entries of /proc. */
export function allPids(): number[] {
  const pids: number[] = []
  for (const name of readdirSync('/proc')) {
    const pid = Number(name)
    if (Number.isInteger(pid) && pid > 0) pids.push(pid)
  }
  return pids
}

/** Live processes whose command line contains `text` (used by tests to count survivors); one pass, see `settledPidsWithCmdline`. */
export function pidsWithCmdline(text: string): number[] {
  return [...cmdlineScan(text).found]
}

/**
 * Live processes whose command line contains `text`, looked for until no process is caught inside
 * `execve` (whose arguments read empty for a moment, see scan.ts), for at most `limitMs`.
 */
export async function settledPidsWithCmdline(text: string, limitMs = 2_000): Promise<number[]> {
  const deadline = performance.now() + limitMs
  for (;;) {
    const scan = cmdlineScan(text)
    if (scan.unsure === 0 || performance.now() >= deadline) return [...scan.found]
    await new Promise((resolve) => setTimeout(resolve, 1))
  }
}

function cmdlineScan(text: string): { found: Set<number>; unsure: number } {
  const found = new Set<number>()
  let unsure = 0
  for (const pid of allPids()) {
    if (pid === process.pid) continue
    let cmdline: string
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')
    } catch {
      continue
    }
    if (cmdline.includes(text)) {
      if (isLive(pid)) found.add(pid)
    } else if (cmdline === '') {
      // Zombies, kernel threads and exiting processes have no arguments; anything else is in execve.
      const stat = readStat(pid)
      if (stat && stat.state !== 'Z' && stat.state !== 'X' && !(stat.flags & (PF_EXITING | PF_KTHREAD))) unsure++
    }
  }
  return { found, unsure }
}

/**
 * Sends a signal to each process; after SIGTERM also SIGCONT, since a stopped process cannot act
 * on SIGTERM until it runs again.
 */
export function signalEach(pids: Iterable<number>, signal: NodeJS.Signals): void {
  for (const pid of pids) {
    signalPid(pid, signal)
    if (signal === 'SIGTERM') signalPid(pid, 'SIGCONT')
  }
}

/** Sends a signal, ignoring processes that are already gone. */
export function signalPid(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal)
  } catch {
    // ESRCH: gone already; EPERM: not ours (cannot happen for our own descendants).
  }
}
