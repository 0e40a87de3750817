import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { StartupError } from './errors.js'

/**
 * `dsh-bash mcp --nice N`: the server's scheduling weight against the commands it runs.
 *
 * Why: on a machine whose CPUs the commands saturate, the server waits for a CPU like everything
 * else, and every session's output, progress, notices and HTTP requests wait with it. Measured on
 * the 2-CPU test VM (bench/README.md, issue 16): at the 50-session load an idle process already sees
 * an event-loop delay p99 of 14–27 ms, the server 27–88 ms; with its autogroup at nice -10 the
 * server's p99 was 5.8–7.3 ms, below that idle process, at the same throughput. The server needs
 * little CPU (about 3 ms per call), so a higher weight makes it answer sooner without starving the
 * commands.
 *
 * How: the kernel's autogroups (`CONFIG_SCHED_AUTOGROUP`, on by default in most distributions)
 * share the CPU between sessions first, and every command runs in a session of its own, hence in
 * an autogroup of its own at nice 0. So the value is written to the server's autogroup
 * (`/proc/self/autogroup`), never to its process nice: a process nice would be inherited by every
 * command it starts. Without autogroups the option is refused for that reason.
 *
 * The autogroup is the session's: in a shared session (started from a terminal, or as a child of an
 * MCP client over stdio) it applies to every process of that session too; the caller is warned.
 */
export interface NiceApplied {
  /** The autogroup's nice value read back after the write. */
  nice: number
  /** Other live processes of the server's session (they share the autogroup); 0 in a session of its own. */
  sharedWith: number
}

const AUTOGROUP_SWITCH = '/proc/sys/kernel/sched_autogroup_enabled'
const OWN_AUTOGROUP = '/proc/self/autogroup'

/** Writes `nice` to the server's autogroup; throws a `StartupError` naming what is missing or refused. */
export async function applyServerNice(nice: number): Promise<NiceApplied> {
  let enabled: string
  try {
    enabled = readFileSync(AUTOGROUP_SWITCH, 'utf8').trim()
    readFileSync(OWN_AUTOGROUP, 'utf8')
  } catch {
    throw new StartupError(`--nice: this kernel has no autogroups (${AUTOGROUP_SWITCH} or ${OWN_AUTOGROUP} is missing); a process nice would be inherited by every command`)
  }
  if (enabled !== '1') throw new StartupError(`--nice: autogroups are switched off (${AUTOGROUP_SWITCH} is ${enabled}); a process nice would be inherited by every command`)
  // The kernel limits autogroup changes of unprivileged callers to one per 100 ms machine-wide (EAGAIN).
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(OWN_AUTOGROUP, String(nice))
      break
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code === 'EAGAIN' && attempt < 10) {
        await new Promise((resolve) => setTimeout(resolve, 110))
        continue
      }
      if (code === 'EPERM' || code === 'EACCES') throw new StartupError(`--nice ${nice}: not permitted (a value below the current one needs root or CAP_SYS_NICE)`)
      throw new StartupError(`--nice ${nice}: cannot write ${OWN_AUTOGROUP}: ${(error as Error).message}`)
    }
  }
  const readBack = /nice (-?\d+)/.exec(readFileSync(OWN_AUTOGROUP, 'utf8'))
  return { nice: readBack ? Number(readBack[1]) : nice, sharedWith: sessionMembers() }
}

/** Live processes of this process's session other than itself. */
function sessionMembers(): number {
  const own = statFields(process.pid)
  if (!own) return 0
  let count = 0
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue
    const fields = statFields(Number(entry))
    if (fields && fields.sid === own.sid && fields.state !== 'Z') count++
  }
  return count
}

function statFields(pid: number): { sid: number; state: string } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'latin1')
    // Field 2 (the command name) may hold spaces and parentheses: count from the last `) `.
    const rest = text.slice(text.lastIndexOf(')') + 2).split(' ')
    return { state: rest[0], sid: Number(rest[3]) }
  } catch {
    return undefined
  }
}
