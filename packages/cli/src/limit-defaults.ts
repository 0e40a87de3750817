import { totalmem } from 'node:os'
import { formatSize } from '@deepseek-ai/dsh-bash'

/**
 * The limits `dsh-bash mcp` and `dsh-bash agent` give every command of the local and sandbox
 * executors when neither a flag nor `--executor-config` sets them (README, "Limits"). They exist so
 * that one command cannot take the server or the machine down: a fork bomb stops at `pids`, an
 * allocation at `memory` (the kernel's OOM killer ends the command, not the machine's biggest
 * process, which may be the server), `/tmp` at `tmp` (tmpfs lives in RAM).
 *
 * - memory: a quarter of the RAM rounded down to 512 MiB, at least 512 MiB, at most 8 GiB (5.5 GiB
 *   on the development machine's 23.5 GiB): large builds and test suites fit (a TypeScript build of this repository peaks under
 *   1 GiB), and four commands at their limit still leave the server room;
 * - pids: 1024 processes and threads: a `make -j` of compilers, a JVM or a browser under test fit
 *   (each thread counts); the development machine's pid_max is 32768;
 * - tmp: 2 GiB (sandbox only), counted in the memory limit anyway (tmpfs pages are the command's);
 * - CPU: none. The scheduler shares the CPUs fairly: a busy command slows the server, never stops
 *   it; `--nice` gives the server a larger share, `--limit-cpu` caps a command.
 */
export function limitDefaults(ram = totalmem()): { memory: number; pids: number; tmp: number } {
  const mib = 2 ** 20
  // Rounded down to 512 MiB, so that the help and the marker show a round figure.
  const memory = Math.min(8 * 1024 * mib, Math.max(512 * mib, Math.floor(ram / 4 / (512 * mib)) * 512 * mib))
  return { memory, pids: 1024, tmp: 2 * 1024 * mib }
}

/** The kinds the defaults apply to (the others have their own, or a machine whose RAM this one cannot know). */
const DEFAULTED_KINDS = ['local', 'sandbox']

/**
 * Fills the defaults into `config.limits` of a local or sandbox executor, for every limit that
 * neither a flag (`values`, `none` included) nor the config set.
 */
export function applyLimitDefaults(kind: string, values: Record<string, unknown>, config: Record<string, unknown>, ram = totalmem()): void {
  if (!DEFAULTED_KINDS.includes(kind)) return
  const defaults = limitDefaults(ram)
  const limits: Record<string, unknown> = { ...((config.limits as Record<string, unknown> | undefined) ?? {}) }
  const names = kind === 'sandbox' ? (['memory', 'pids', 'tmp'] as const) : (['memory', 'pids'] as const)
  for (const name of names) {
    if (values[`limit-${name}`] === undefined && limits[name] === undefined) limits[name] = defaults[name]
  }
  config.limits = limits
}

/** The help lines that state the defaults on this machine. */
export function limitDefaultsHelp(): string[] {
  const defaults = limitDefaults()
  return [
    `                          defaults of mcp and agent with local and sandbox: --limit-memory ${formatSize(defaults.memory).replace(/iB$/, '')}`,
    `                          (a quarter of the RAM), --limit-pids ${defaults.pids}, --limit-tmp ${formatSize(defaults.tmp).replace(/iB$/, '')}, no CPU limit`,
  ]
}
