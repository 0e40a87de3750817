/**
 * The executors that other engineers are still building: each is measured only when its package
 * is built and works here; otherwise `reason` says why it is not measured.
 */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const dist = (pkg) => fileURLToPath(new URL(`../../packages/${pkg}/dist/index.js`, import.meta.url))

/** → {available: true, plugin, config} | {available: false, reason} */
export async function sandboxExecutor() {
  const path = dist('bash-sandbox')
  if (!existsSync(path)) return { available: false, reason: 'not measured: packages/bash-sandbox is not built (not landed yet)' }
  let mod
  try {
    mod = await import('@deepseek-ai/dsh-bash-sandbox')
  } catch (error) {
    return { available: false, reason: `not measured: cannot load @deepseek-ai/dsh-bash-sandbox: ${error.message}` }
  }
  const plugin = mod.SandboxExecutor
  if (typeof plugin !== 'function') return { available: false, reason: 'not measured: @deepseek-ai/dsh-bash-sandbox exports no SandboxExecutor' }
  return { available: true, plugin, config: {}, bwrapArgs: mod.bwrapArgs }
}
