import { readdirSync, readFileSync } from 'node:fs'

/** Facts about one process, read from /proc/<pid>/stat. */
export interface ProcStat {
  pid: number
  ppid: number
  pgid: number
  sid: number
  /** One letter: R, S, D, Z, T, … */
  state: string
}

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
  // The command name (field 2) is in parentheses and may itself contain spaces or parentheses.
  const close = text.lastIndexOf(')')
  const rest = text.slice(close + 2).split(' ')
  return { pid, state: rest[0], ppid: Number(rest[1]), pgid: Number(rest[2]), sid: Number(rest[3]) }
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

/** Live processes whose environment contains `NAME=value` exactly. */
export function pidsWithEnv(name: string, value: string): number[] {
  const needle = Buffer.from(`\0${name}=${value}\0`)
  const found: number[] = []
  for (const pid of allPids()) {
    let env: Buffer
    try {
      env = readFileSync(`/proc/${pid}/environ`)
    } catch {
      continue
    }
    // Prefix a NUL so the first variable matches like the others.
    if (Buffer.concat([Buffer.from([0]), env, Buffer.from([0])]).includes(needle) && isLive(pid)) found.push(pid)
  }
  return found
}

/** Live processes whose command line contains `text` (used by tests to count survivors). */
export function pidsWithCmdline(text: string): number[] {
  const found: number[] = []
  for (const pid of allPids()) {
    if (pid === process.pid) continue
    let cmdline: string
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')
    } catch {
      continue
    }
    if (cmdline.includes(text) && isLive(pid)) found.push(pid)
  }
  return found
}

/** Live members of a process group. */
export function pidsInGroup(pgid: number): number[] {
  const found: number[] = []
  for (const pid of allPids()) {
    const stat = readStat(pid)
    if (stat && stat.pgid === pgid && stat.state !== 'Z' && stat.state !== 'X') found.push(pid)
  }
  return found
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
