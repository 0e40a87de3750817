import { mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Context } from 'cordis'
import { loadExecutorPlugin, type ConformanceConfig, type ConformanceInstance, type ServerProcessOptions } from '@deepseek-ai/dsh-bash/conformance'
import { pidsWithCmdline } from '@deepseek-ai/dsh-bash-local'
import { SandboxExecutor, type SandboxExecutorConfigInput } from '../src/index.js'

/** Live processes (zombies excluded) whose command line contains `marker`. */
export async function countProcesses(marker: string): Promise<number> {
  return pidsWithCmdline(marker).length
}

/** A private physical directory; removed by the returned function. */
export function scratchDir(prefix = 'dsh-bash-sandbox-test-'): { path: string; remove(): void } {
  const path = realpathSync(mkdtempSync(join(tmpdir(), prefix)))
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) }
}

/**
 * A private physical directory on the host outside /tmp (which the sandbox replaces by a private
 * one): under /var/tmp, else the home directory, else the current one. Removed by `remove`.
 */
export function outsideDir(prefix = 'dsh-bash-sandbox-outside-'): { path: string; remove(): void } {
  for (const parent of ['/var/tmp', process.env.HOME, process.cwd()]) {
    if (!parent) continue
    try {
      const path = realpathSync(mkdtempSync(join(parent, prefix)))
      return { path, remove: () => rmSync(path, { recursive: true, force: true }) }
    } catch {
      // Try the next one.
    }
  }
  throw new Error('no writable directory outside /tmp')
}

let probed: { reason?: string } | undefined

/**
 * Why real-bwrap tests cannot run here (bwrap missing, or no namespaces), or undefined when they
 * can. Probed once per test file; the reason is printed so a skipped run says why.
 */
export function sandboxUnavailable(): string | undefined {
  if (!probed) {
    const executor = new SandboxExecutor(new Context(), {})
    probed = { reason: executor.unavailableReason }
    void executor.shutdown()
    if (probed.reason) console.warn(`[bash-sandbox tests] skipping the tests that need bwrap: ${probed.reason}`)
  }
  return probed.reason
}

export interface SandboxInstance extends ConformanceInstance {
  executor: SandboxExecutor
}

/** A SandboxExecutor loaded as a cordis plugin on a fresh root context. */
export async function createSandbox(config: SandboxExecutorConfigInput = {}): Promise<SandboxInstance> {
  return loadExecutorPlugin(SandboxExecutor, { graceMs: 300, ...config })
}

/** The conformance factory: `base` under the suite's settings. */
export function sandboxFactory(base: SandboxExecutorConfigInput) {
  return (config?: ConformanceConfig) => createSandbox({ ...base, ...config })
}

/** The conformance suite's `serverProcess`: the built SandboxExecutor in a Node.js process of its own. */
export function serverProcess(config: SandboxExecutorConfigInput): ServerProcessOptions {
  return { module: fileURLToPath(new URL('../dist/index.js', import.meta.url)), exportName: 'SandboxExecutor', config: { graceMs: 300, ...config } }
}
