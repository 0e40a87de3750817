import { readFileSync } from 'node:fs'
import { hostname } from 'node:os'
import type { EngineClient } from './engine.js'

/** Every container of this executor carries it. */
export const LABEL_EXECUTOR = 'dsh-bash.executor'
/** `<hostname>/<pid>/<process start time>` of the server that created the container. */
export const LABEL_SERVER = 'dsh-bash.server'

/** The start time of a process (clock ticks since boot), or undefined when it does not exist. */
function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
  } catch {
    return undefined
  }
}

/** This server's identity label: host name, pid and start time (a reused pid does not match). */
export function serverIdentity(): string {
  return `${hostname()}/${process.pid}/${startTimeOf(process.pid) ?? '0'}`
}

/**
 * True when a `LABEL_SERVER` value names a dsh-bash server of this host that is no longer running
 * (its pid is gone or now belongs to a process with another start time). Servers of other hosts
 * are never dead by this test: they are not ours to judge.
 */
export function isDeadServer(label: string): boolean {
  const [host, pid, start] = label.split('/')
  if (host !== hostname() || pid === undefined) return false
  return startTimeOf(Number(pid)) !== start
}

/**
 * Removes containers of this executor created by a dsh-bash server of this host that is no longer
 * running (the lifeline removes them within about a second; this covers an engine that was down
 * or a container whose removal failed). Containers of live servers and of other hosts are left alone.
 * Returns the ids removed.
 */
export async function sweepDeadServers(engine: EngineClient): Promise<string[]> {
  const filters = encodeURIComponent(JSON.stringify({ label: [`${LABEL_EXECUTOR}=container`] }))
  const list = await engine.request<Array<{ Id: string; Labels?: Record<string, string> }>>('GET', `/containers/json?all=1&filters=${filters}`)
  const removed: string[] = []
  for (const container of list ?? []) {
    if (!isDeadServer(container.Labels?.[LABEL_SERVER] ?? '')) continue
    try {
      await engine.request('DELETE', `/containers/${container.Id}?force=1&v=1`)
      removed.push(container.Id)
    } catch {
      // Gone already, or being removed.
    }
  }
  return removed
}
