/**
 * The executor publishes `ctx.bash` from the base constructor, before its own fields are set: a
 * plugin that injects it and was loaded first (tool-bash does) reads `capabilities` and
 * `sandboxMode` right then. They must already be the executor's own.
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterAll, describe, expect, it } from 'vitest'
import type { ExecutorCapabilities } from '@deepseek-ai/dsh-bash'
import { LocalExecutor } from '@deepseek-ai/dsh-bash-local'
import { SandboxExecutor } from '../src/index.js'

const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-published-')))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Loads a reader of ctx.bash first, then the executor; returns what the reader saw at once and what the executor says later. */
async function seenAtPublish(load: (root: Context) => void) {
  const root = new Context()
  const seen: { capabilities?: ExecutorCapabilities; sandboxMode?: string; error?: string }[] = []
  root.plugin({
    name: 'reader',
    inject: ['bash'],
    apply(ctx: Context) {
      try {
        seen.push({ capabilities: ctx.bash.capabilities, sandboxMode: ctx.bash.sandboxMode })
      } catch (error) {
        seen.push({ error: (error as Error).message })
      }
    },
  })
  load(root)
  await new Promise((resolve) => setTimeout(resolve, 50))
  const later = { capabilities: root.bash.capabilities, sandboxMode: root.bash.sandboxMode }
  await root.bash.shutdown()
  return { first: seen[0], later }
}

describe('capabilities read the moment the executor is published', () => {
  it('sandbox: the configured network and mode, not a crash or a default', async () => {
    const { first, later } = await seenAtPublish((root) => root.plugin(SandboxExecutor, { workspaceRoot: dir, cwd: dir, network: true, mode: 'read-only' }))
    expect(first).toEqual(later)
    expect(first.capabilities?.networkModes).toEqual(['on'])
    expect(first.sandboxMode).toBe('read-only')
    expect(first.capabilities?.limits).toContain('tmp')
  })

  it('local: the limits its mechanisms hold', async () => {
    const { first, later } = await seenAtPublish((root) => root.plugin(LocalExecutor, { cwd: dir }))
    expect(first).toEqual(later)
    expect(first.capabilities?.limits).toContain('memory')
  })
})
