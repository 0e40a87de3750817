import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { LocalExecutor, type LocalExecutorConfigInput } from '@deepseek-ai/dsh-bash-local'
import { ToolRegistry, type ToolCaller, type ToolContent, type ToolResult } from '@deepseek-ai/dsh-tools'
import { ToolBash } from '../src/index.js'

/** Waits until cordis has applied pending plugins. */
export const settle = () => new Promise<void>((resolve) => setTimeout(resolve, 20))

export interface Injected {
  agent: string
  content: ToolContent[]
  source: unknown
}

/** An agent-shaped caller whose injections are recorded. */
export class RecordingAgent implements ToolCaller {
  readonly session: { header: { id: string; cwd: string } }
  disposed = false
  readonly injected: Injected[] = []
  constructor(
    readonly id: string,
    sessionId: string,
    cwd: string,
    private readonly log: Injected[],
  ) {
    this.session = { header: Object.freeze({ id: sessionId, cwd }) }
  }
  inject(content: ToolContent[], options: { source: unknown }): void {
    if (this.disposed) throw Object.assign(new Error(`agent "${this.id}" is disposed`), { code: 'DSH_AGENT_DISPOSED' })
    const entry = { agent: this.id, content, source: options.source }
    this.injected.push(entry)
    this.log.push(entry)
  }
}

/** A real cordis app: tool registry, local executor, tool-bash, and a directory of recording agents. */
export async function createApp(config: LocalExecutorConfigInput = {}) {
  const workspace = mkdtempSync(join(tmpdir(), 'tool-bash-test-'))
  const root = new Context()
  const injections: Injected[] = []
  const agents: RecordingAgent[] = []
  root.plugin(ToolRegistry)
  root.set('agents', { list: () => agents.filter((a) => !a.disposed) })
  const executor = root.plugin(LocalExecutor, { graceMs: 500, cwd: workspace, ...config })
  const toolBash = root.plugin(ToolBash)
  await settle()
  let seq = 0
  const app = {
    root,
    workspace,
    injections,
    executor,
    toolBash,
    agent(sessionId: string, cwd = workspace): RecordingAgent {
      const agent = new RecordingAgent(`agent-${++seq}`, sessionId, cwd, injections)
      agents.push(agent)
      return agent
    },
    async call(name: string, args: unknown, agent?: ToolCaller, signal?: AbortSignal): Promise<ToolResult> {
      return root.tools.execute({ callId: `call-${++seq}`, name, arguments: args, agent, signal })
    },
    async text(name: string, args: unknown, agent?: ToolCaller): Promise<{ text: string; isError: boolean }> {
      const result = await app.call(name, args, agent)
      return { text: result.content.map((c) => c.text).join('\n'), isError: result.isError }
    },
    async dispose() {
      await root.bash?.shutdown()
      executor.dispose()
      rmSync(workspace, { recursive: true, force: true })
    },
  }
  return app
}

export type App = Awaited<ReturnType<typeof createApp>>

/** Polls until `check` is true (bounded; a hang is what this guards against, not speed). */
export async function until(check: () => boolean | Promise<boolean>, limitMs = 20_000): Promise<void> {
  const deadline = Date.now() + limitMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
