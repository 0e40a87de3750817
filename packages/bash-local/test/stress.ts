import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { shellQuote as quote } from '@deepseek-ai/dsh-bash/conformance'
import { allPids, settledPidsWithCmdline } from '../src/proc.js'

/**
 * CPU load from the test itself: `count` shell busy loops in their own process groups. Each stops by
 * itself after `limitSeconds` even if the test worker dies without calling `stop`.
 */
export function busyLoops(count: number, limitSeconds = 300): { stop(): void } {
  const children = Array.from({ length: count }, () => {
    const child = spawn('bash', ['--noprofile', '--norc', '-c', `end=$((SECONDS + ${limitSeconds})); while [ $SECONDS -lt $end ]; do :; done`], {
      detached: true,
      stdio: 'ignore',
    })
    child.on('error', () => {})
    return child
  })
  return {
    stop() {
      for (const child of children) {
        try {
          process.kill(-child.pid!, 'SIGKILL')
        } catch {
          // Gone already.
        }
      }
    },
  }
}

/** SIGKILLs every process whose environment holds `name=value` until none is left (cleanup after a test's own trees). */
export async function killByEnv(name: string, value: string): Promise<void> {
  const needle = Buffer.from(`${name}=${value}\0`)
  for (let round = 0, empty = 0; round < 500 && empty < 3; round++) {
    let found = 0
    for (const pid of allPids()) {
      try {
        if (readFileSync(`/proc/${pid}/environ`).includes(needle)) {
          process.kill(pid, 'SIGKILL')
          found++
        }
      } catch {
        // Gone.
      }
    }
    empty = found === 0 ? empty + 1 : 0
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

/** What a stress tree may use to get away. */
export type Escape = 'setsid' | 'in-group'

/**
 * A command that forks as fast as it can until it is killed, every process carrying `1000.<tag>` in
 * its command line. TERM is ignored everywhere (inherited across exec), so the kill's SIGKILL phase
 * must find everything while the tree keeps forking. Two loops each start up to `longLived`
 * processes that would live 1000 s (the survivors a leak would leave), then go on starting
 * short-lived ones, so that processes are inside fork and execve at any moment of the kill; two
 * more processes replace themselves with a new bash forever (always inside execve).
 * `setsid`: the long-lived ones leave the session (`setsid sleep &`, and a double fork
 * `(setsid sleep &)`), the loops are session leaders of their own; `in-group`: nothing leaves.
 */
export function stressTree(tag: string, escape: Escape, longLived = 150): string {
  const sid = escape === 'setsid' ? 'setsid ' : ''
  const loop = [
    `n=0`,
    `while :; do`,
    `  if ((n++ < ${longLived})); then ${sid}sleep 1000.${tag} & (${sid}sleep 1000.${tag} &); ((n++))`,
    `  else ${sid}sh -c ': 1000.${tag}' & /bin/true 1000.${tag}; fi`,
    `done`,
  ].join('\n')
  const reexec = `exec bash --noprofile --norc -c "$BASH_EXECUTION_STRING" 1000.${tag}`
  return [
    `trap '' TERM`,
    `for i in 1 2; do ${sid}bash --noprofile --norc -c ${quote(loop)} 1000.${tag} & done`,
    `for i in 1 2; do ${sid}bash --noprofile --norc -c ${quote(reexec)} 1000.${tag} & done`,
    `echo started`,
    `wait`,
  ].join('\n')
}

/** Live processes with `1000.<tag>` in their command line, none caught inside execve. */
export async function survivors(tag: string): Promise<number[]> {
  return settledPidsWithCmdline(`1000.${tag}`)
}

/** `ps`-like lines for a report of survivors. */
export function describe(pids: number[]): string {
  return pids
    .map((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
        const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')
        return `${pid} ${stat.slice(stat.lastIndexOf(')') + 2).split(' ').slice(0, 4).join(' ')} ${cmd}`
      } catch {
        return `${pid} (gone)`
      }
    })
    .join('\n')
}

/** Kills survivors so that one failed run leaves nothing for the next. */
export async function killSurvivors(tag: string): Promise<void> {
  for (let round = 0; round < 50; round++) {
    const pids = await survivors(tag)
    if (pids.length === 0) return
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // Gone.
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}
