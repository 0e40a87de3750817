import { Context, Logger } from 'cordis'
import type {} from '@deepseek-ai/dsh-agent'
import { BASH_ERROR, routeLogs } from '@deepseek-ai/dsh-bash'
import { hasCode } from '@deepseek-ai/dsh-tools'
import type { CommonOptions } from './args.js'
import { executorKind, type ExecutorKind } from './executors.js'
import { StartupError, UsageError } from './errors.js'

export { StartupError }

/** A composed application: the tools over one executor. */
export interface App {
  ctx: Context
  /** Kills every task (whole process trees, waiting until they are gone), then unloads everything. Idempotent. */
  shutdown(): Promise<void>
}


/** The optional policy plugin. */
const POLICY = {
  module: '@deepseek-ai/dsh-bash-policy',
  import: (): Promise<Record<string, unknown>> => import('@deepseek-ai/dsh-bash-policy'),
  plugin: 'BashPolicy',
  load: 'loadPolicyFile',
}

type PluginClass = new (ctx: Context, config: Record<string, unknown>) => unknown

/** Sends cordis' log output to stderr: stdout belongs to the MCP stdio transport and to REPL results. */
export function logToStderr(): void {
  routeLogs(process.stderr)
}

/** The executor plugin class for a kind, imported on demand. */
export async function loadExecutor(kind: ExecutorKind): Promise<PluginClass> {
  // The table of executors.ts names the package and export of every kind.
  const { module, export: name, load } = executorKind(kind)
  let loaded: Record<string, unknown>
  try {
    loaded = await load()
  } catch (error) {
    throw new StartupError(`executor "${kind}" is not available: ${firstLine(error)}`)
  }
  const plugin = loaded[name]
  if (typeof plugin !== 'function') throw new StartupError(`executor "${kind}" is not available: ${module} has no export ${name}`)
  return plugin as PluginClass
}

/**
 * Loads the policy plugin and validates the file up front: a policy that cannot be read is a usage
 * error naming the place in the file, not a server that denies everything.
 */
async function loadPolicy(path: string): Promise<{ plugin: unknown; config: unknown }> {
  let loaded: Record<string, unknown>
  try {
    loaded = await POLICY.import()
  } catch (error) {
    throw new StartupError(`--policy is not available: ${firstLine(error)}`)
  }
  const plugin = loaded[POLICY.plugin]
  const load = loaded[POLICY.load]
  if (!plugin || typeof load !== 'function') throw new StartupError(`--policy is not available: ${POLICY.module} has no ${POLICY.plugin}/${POLICY.load}`)
  try {
    ;(load as (path: string) => unknown)(path)
  } catch (error) {
    throw new UsageError(`--policy: ${firstLine(error)}`)
  }
  return { plugin, config: { file: path } }
}

/**
 * Builds the cordis app: `ctx.tools`, `ctx.agents`, the executor (`ctx.bash`), the four bash tools, and
 * the policy when one is given. Plugin failures, which cordis only logs, become a `StartupError`.
 */
export async function composeApp(options: CommonOptions): Promise<App> {
  logToStderr()
  // Imported here, not at the top: `dsh-bash mcp` answers `initialize` before any of this loads.
  const [{ Agents }, { ToolBash }, { ToolRegistry }] = await Promise.all([
    import('@deepseek-ai/dsh-agent'),
    import('@deepseek-ai/dsh-tool-bash'),
    import('@deepseek-ai/dsh-tools'),
  ])
  const Executor = await loadExecutor(options.executor)
  const policy = options.policy ? await loadPolicy(options.policy) : undefined
  const ctx = new Context()
  const errors: string[] = []
  let invalidConfig: string | undefined
  ctx.on('internal/error', (error: unknown) => {
    errors.push(firstLine(error))
    // The executor refused its config: a mistake on the command line (exit 2), as a bad policy is.
    if (hasCode(error, BASH_ERROR.invalidConfig)) invalidConfig ??= firstLine(error)
  })
  const base = Logger.levels.base
  Logger.levels.base = 0 // Startup errors are reported once, below, without a stack trace.
  try {
    ctx.plugin(ToolRegistry)
    ctx.plugin(Agents)
    const config = { ...options.executorConfig, ...(options.workdir ? { cwd: options.workdir } : {}) }
    ctx.plugin(Executor as never, config)
    ctx.plugin(ToolBash, options.toolBash ?? {})
    if (policy) ctx.plugin(policy.plugin as never, policy.config as never)
    await ctx.lifecycle.flush()
  } finally {
    Logger.levels.base = base
  }
  const app = { ctx, shutdown: once(() => stop(ctx)) }
  const missing = !ctx.get('bash') ? `executor "${options.executor}"` : !ctx.tools?.get('bash') ? 'the bash tools' : undefined
  if (missing || errors.length > 0) {
    await app.shutdown()
    if (invalidConfig) throw new UsageError(`--executor-config: ${invalidConfig}`)
    throw new StartupError(`could not start ${missing ?? 'the tools'}: ${errors.join('; ') || 'unknown error'}`)
  }
  try {
    // What the executor needs outside this process (a host, an engine and image, a cluster): a wrong
    // setup fails here, in one line naming the fix, instead of on every call.
    await ctx.get('bash')!.check()
  } catch (error) {
    await app.shutdown()
    throw new StartupError(`executor "${options.executor}": ${firstLine(error)}`)
  }
  return app
}

/**
 * Runs `apply` in a plugin that injects `tools` and `agents`, so what it creates (agents, listeners,
 * the approval service) is undone with the app; resolves with what `apply` returned. If the plugin
 * cannot run or `apply` throws, the app is shut down and a `StartupError` says it could not start `what`.
 */
export async function attach<T>(app: App, name: string, what: string, apply: (ctx: Context) => T): Promise<T> {
  let result: { value: T } | undefined
  let failure: unknown
  app.ctx.plugin({
    name,
    inject: ['tools', 'agents'],
    apply: (ctx: Context) => {
      try {
        result = { value: apply(ctx) }
      } catch (error) {
        failure = error
      }
    },
  })
  if (!result) {
    await app.shutdown()
    throw new StartupError(`could not start ${what}: ${failure instanceof Error ? failure.message : 'the tools are not loaded'}`)
  }
  return result.value
}

async function stop(ctx: Context): Promise<void> {
  const bash = ctx.get('bash')
  try {
    await bash?.shutdown()
  } catch (error) {
    process.stderr.write(`dsh-bash: executor shutdown failed: ${firstLine(error)}\n`)
  }
  await ctx.stop()
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined
  return () => (running ??= fn())
}

export function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  return message.split('\n')[0]
}
