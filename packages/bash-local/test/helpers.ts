import { mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Context } from 'cordis'
import { loadExecutorPlugin, type ConformanceConfig, type ConformanceInstance, type ServerProcessOptions } from '@deepseek-ai/dsh-bash/conformance'
import { LocalExecutor, type LocalExecutorConfigInput, settledPidsWithCmdline } from '../src/index.js'

/**
 * Live processes (zombies excluded) whose command line contains `marker`, looked for until no
 * process is caught inside execve (one plain look can miss an escapee there and pass a leak).
 */
export async function countProcesses(marker: string): Promise<number> {
  return (await settledPidsWithCmdline(marker)).length
}

/** A private physical directory for a test file; removed by the returned function. */
export function scratchDir(): { path: string; remove(): void } {
  const path = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-bash-local-test-')))
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) }
}

/** True when this machine lets the local executor use a cgroup per command. */
export function cgroupAvailable(): boolean {
  const ctx = new Context()
  try {
    const executor = new LocalExecutor(ctx, { containment: 'cgroup' })
    void executor.shutdown()
    return true
  } catch {
    return false
  }
}

export interface LocalInstance extends ConformanceInstance {
  executor: LocalExecutor
}

/** A LocalExecutor loaded as a cordis plugin on a fresh root context. */
export async function createLocal(config: LocalExecutorConfigInput = {}): Promise<LocalInstance> {
  return loadExecutorPlugin(LocalExecutor, { graceMs: 300, ...config })
}

/** The conformance factory for one containment strategy. */
export function localFactory(containment: LocalExecutorConfigInput['containment']) {
  return (config?: ConformanceConfig) => createLocal({ containment, ...config })
}

/** The conformance suite's `serverProcess`: the built LocalExecutor in a Node.js process of its own. */
export function serverProcess(containment: LocalExecutorConfigInput['containment']): ServerProcessOptions {
  return { module: fileURLToPath(new URL('../dist/index.js', import.meta.url)), exportName: 'LocalExecutor', config: { containment, graceMs: 300 } }
}
