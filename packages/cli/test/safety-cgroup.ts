import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ownV1Directory } from '@deepseek-ai/dsh-bash-local'

/**
 * An outer cgroup around a server under test, for the tests that run a fork bomb or a huge
 * allocation: if the limits under test failed, this one still holds, so a test mistake cannot take
 * the machine down. Made in the v1 `pids` and `memory` hierarchies of a hybrid host (this machine);
 * undefined (with the reason) where they are not writable: such tests must then not run.
 */
export interface SafetyCgroup {
  /** The command line that runs `argv` inside (the shell joins, then execs). */
  wrap(argv: string[]): string[]
  /** Processes (and threads) in it now. */
  pids(): number
  /** Removes it (its processes must be gone). */
  remove(): void
}

export function safetyCgroup(limits: { memoryBytes: number; pids: number }): SafetyCgroup | { reason: string } {
  const pidsOwn = ownV1Directory('pids')
  const memoryOwn = ownV1Directory('memory')
  if (!pidsOwn || !memoryOwn) return { reason: 'no cgroup v1 pids and memory hierarchies to put an outer limit around the server' }
  const name = `dsh-test-safety-${process.pid}-${Math.random().toString(36).slice(2, 8)}`
  const pidsDir = join(pidsOwn, name)
  const memoryDir = join(memoryOwn, name)
  try {
    mkdirSync(pidsDir)
    writeFileSync(join(pidsDir, 'pids.max'), String(limits.pids))
    mkdirSync(memoryDir)
    writeFileSync(join(memoryDir, 'memory.limit_in_bytes'), String(limits.memoryBytes))
    if (existsSync(join(memoryDir, 'memory.memsw.limit_in_bytes'))) writeFileSync(join(memoryDir, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes))
  } catch (error) {
    for (const dir of [pidsDir, memoryDir]) tryRmdir(dir)
    return { reason: `cannot make an outer cgroup: ${(error as Error).message}` }
  }
  return {
    wrap: (argv) => ['/bin/sh', '-c', 'echo $$ > "$1/cgroup.procs" && echo $$ > "$2/cgroup.procs" && shift 2 && exec "$@"', 'sh', pidsDir, memoryDir, ...argv],
    pids: () => Number(readFileSync(join(pidsDir, 'pids.current'), 'utf8')),
    remove: () => {
      for (const dir of [pidsDir, memoryDir]) tryRmdir(dir)
    },
  }
}

function tryRmdir(dir: string): void {
  try {
    rmdirSync(dir)
  } catch {
    // Gone, or a late exit still in it.
  }
}
