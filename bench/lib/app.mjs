/**
 * Composes a real app the way front ends do (see packages/tool-bash/test/harness.ts): the tool
 * registry, an executor plugin, tool-bash and the real `Agents` service, all from the built dist.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { ToolRegistry } from '@deepseek-ai/dsh-tools'
import { ToolBash } from '@deepseek-ai/dsh-tool-bash'
import { Agents } from '@deepseek-ai/dsh-agent'
import { LocalExecutor, findExecutable } from '@deepseek-ai/dsh-bash-local'

export const settle = (ms = 20) => new Promise((resolve) => setTimeout(resolve, ms))
export const tick = () => new Promise((resolve) => setImmediate(resolve))

/** Absolute path of bash, resolved once like the local executor does. */
export const BASH = findExecutable('bash')

/**
 * @param {object} options
 * @param {Function} [options.executor] the executor plugin (default LocalExecutor)
 * @param {object} [options.config] its config (`cwd` defaults to a fresh temp workspace)
 */
export async function createApp({ executor = LocalExecutor, config = {}, workspace } = {}) {
  const ownWorkspace = workspace === undefined
  workspace ??= mkdtempSync(join(tmpdir(), 'dsh-bench-'))
  const root = new Context()
  root.plugin(ToolRegistry)
  root.plugin(Agents)
  // DSH_BENCH_EXECUTOR_CONFIG (JSON) adds to the local executor's config, as load.mjs passes it to
  // its server: e.g. '{"launcher":"helper-node"}' to measure the Node helper (issue 16).
  const fromEnv = executor === LocalExecutor && process.env.DSH_BENCH_EXECUTOR_CONFIG ? JSON.parse(process.env.DSH_BENCH_EXECUTOR_CONFIG) : {}
  const executorFork = root.plugin(executor, { cwd: workspace, ...fromEnv, ...config })
  root.plugin(ToolBash)
  await settle()
  if (!root.get('bash')) throw new Error(`the executor ${executor.name} did not load`)
  if (!root.get('tools')?.list?.().length && !root.get('tools')) throw new Error('ctx.tools did not load')
  let seq = 0
  const app = {
    root,
    workspace,
    get bash() {
      return root.get('bash')
    },
    /** A real agent of the `Agents` service with the given session id. */
    agent(sessionId, cwd = workspace) {
      return root.agents.create({ session: { id: sessionId, cwd } })
    },
    call(name, args, agent) {
      return root.tools.execute({ callId: `bench-${++seq}`, name, arguments: args, agent })
    },
    async text(name, args, agent) {
      const result = await app.call(name, args, agent)
      const text = result.content.map((c) => c.text).join('\n')
      if (result.isError) throw new Error(`${name} failed: ${text}`)
      return text
    },
    async dispose() {
      await root.get('bash')?.shutdown?.()
      executorFork.dispose()
      root.registry.delete?.(executor)
      if (ownWorkspace) rmSync(workspace, { recursive: true, force: true })
    },
  }
  return app
}

/**
 * The baseline: a bare `child_process.spawn` of `bash --noprofile --norc -c <command>`, output
 * piped and drained (what any tool must do at least), resolved on 'close'.
 */
export function bareSpawn(command, options = {}) {
  return bareSpawnFile(BASH, ['--noprofile', '--norc', '-c', command], options)
}

/** The same for any program (the bwrap floor). */
export function bareSpawnFile(file, args, { cwd, detached = false } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd, detached, stdio: ['ignore', 'pipe', 'pipe'] })
    let bytes = 0
    child.stdout.on('data', (chunk) => (bytes += chunk.length))
    child.stderr.on('data', (chunk) => (bytes += chunk.length))
    child.once('error', reject)
    child.once('close', (code, signal) => resolve({ code, signal, bytes }))
  })
}
