import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LocalExecutor } from '@deepseek-ai/dsh-bash-local'
import { ToolRegistry, type ToolResult } from '@deepseek-ai/dsh-tools'
import { bashOutputSchema, ToolBash } from '../src/index.js'
import { RecordingAgent, settle } from './harness.js'

/**
 * Issue 27: what a command used (`cpuMs`, `peakMemoryBytes`) and the limit it reached
 * (`limitReached`) are in every result's structured facts, where the executor measures them: a
 * local executor with limits held by cgroups (skipped where this machine has none for them).
 */
const MiB = 2 ** 20

describe('usage and limits in the structured facts', () => {
  let workspace: string
  let root: Context
  let held = false
  const agent = () => new RecordingAgent('a', 'session-a', workspace, [])
  let seq = 0

  beforeAll(async () => {
    workspace = mkdtempSync(join(tmpdir(), 'tool-bash-usage-'))
    root = new Context()
    root.plugin(ToolRegistry)
    root.plugin(LocalExecutor, { graceMs: 300, cwd: workspace, limits: { memory: '128M', pids: 20 } })
    root.plugin(ToolBash, { yieldAfterMs: 0 })
    await settle()
    const mechanisms = (root.bash as unknown as { resources: { mechanisms: Record<string, string> } }).resources.mechanisms
    held = mechanisms.memory !== 'rlimit' && mechanisms.pids !== 'rlimit'
    if (!held) console.warn(`[tool-bash usage facts] no cgroup holds limits here (${JSON.stringify(mechanisms)}): skipped`)
  })
  afterAll(async () => {
    await root.bash.shutdown()
    rmSync(workspace, { recursive: true, force: true })
  })

  const call = async (name: string, args: Record<string, unknown>): Promise<ToolResult & { text: string }> => {
    const result = await root.tools.execute({ callId: `c${++seq}`, name, arguments: args, agent: agent() })
    expect(bashOutputSchema.safeParse(result.structured).success, JSON.stringify(result.structured)).toBe(true)
    return { ...result, text: result.content.map((c) => c.text).join('\n') }
  }

  it('a run: its CPU time and peak; an allocation past the memory limit carries limitReached with the marker', async (ctx) => {
    if (!held) return ctx.skip()
    const fine = await call('bash', { command: 'echo hi', description: 'x' })
    expect(fine.structured).toMatchObject({ status: 'completed', cpuMs: expect.any(Number), peakMemoryBytes: expect.any(Number) })
    expect(fine.structured).not.toHaveProperty('limitReached')
    const over = await call('bash', { command: `python3 -c 'b = [b"x" * 2**20 for _ in range(400)]'`, description: 'x' })
    expect(over.text).toContain('[killed: memory limit 128MiB reached]')
    expect(over.structured).toMatchObject({ status: 'killed', signal: 'SIGKILL', limitReached: { memoryBytes: 128 * MiB } })
    expect(over.structured!.peakMemoryBytes).toBeGreaterThanOrEqual(100 * MiB)
  })

  it('a background task that reached the process limit: limitReached once it ended, in bash_output', async (ctx) => {
    if (!held) return ctx.skip()
    const started = await call('bash', { command: 'for i in $(seq 40); do sleep 2 & done; wait', description: 'x', run_in_background: true })
    const id = started.structured!.taskId as string
    let read = await call('bash_output', { task_id: id, wait_ms: 30_000 })
    while (read.structured!.status === 'running') read = await call('bash_output', { task_id: id, wait_ms: 30_000 })
    expect(read.text).toContain('[process limit 20 reached]')
    expect(read.structured).toMatchObject({ taskId: id, limitReached: { processes: 20 }, cpuMs: expect.any(Number) })
  })
})
