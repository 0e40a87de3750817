import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterEach, describe, expect, it } from 'vitest'
import { BASH_ERROR, type ExecutorCapabilities } from '@deepseek-ai/dsh-bash'
import { LocalExecutor } from '@deepseek-ai/dsh-bash-local'
import { ToolRegistry } from '@deepseek-ai/dsh-tools'
import { bashParametersFor, ToolBash } from '../src/index.js'
import { settle } from './harness.js'

// The tool schemas follow the executor's capabilities (never a guess per executor kind): an
// executor that declares no terminals publishes no `interactive` and no bash_input, and refuses
// an interactive start itself (the kit acts on the same declaration).

/** The local executor, declaring (and therefore having: the kit refuses them) no terminals. */
class NoTerminalExecutor extends LocalExecutor {
  static readonly inject: string[] = []
  get capabilities(): ExecutorCapabilities {
    return { ...super.capabilities, interactive: false, resize: false }
  }
}

const cleanups: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function app(executor: typeof LocalExecutor) {
  const workspace = mkdtempSync(join(tmpdir(), 'tool-bash-caps-'))
  const root = new Context()
  root.plugin(ToolRegistry)
  const fork = root.plugin(executor, { cwd: workspace, graceMs: 300 })
  root.plugin(ToolBash)
  await settle()
  cleanups.push(async () => {
    await root.bash?.shutdown()
    fork.dispose()
    rmSync(workspace, { recursive: true, force: true })
  })
  const schemas = root.tools.schemas()
  const bash = schemas.find((s) => s.name === 'bash')!
  return { root, names: schemas.map((s) => s.name), properties: Object.keys((bash.parameters as { properties: object }).properties) }
}

describe('tool schemas derive from the executor capabilities', () => {
  it('an executor with terminals: `interactive` in the bash schema, bash_input registered', async () => {
    const { names, properties } = await app(LocalExecutor)
    expect(names).toEqual(['bash', 'bash_output', 'bash_kill', 'bash_input'])
    expect(properties).toContain('interactive')
    expect(properties).not.toContain('sandbox_permissions')
  })

  it('an executor without terminals: neither, and the executor refuses an interactive start itself', async () => {
    const { root, names, properties } = await app(NoTerminalExecutor)
    expect(names).toEqual(['bash', 'bash_output', 'bash_kill'])
    expect(properties).not.toContain('interactive')
    expect(root.bash.capabilities).toMatchObject({ interactive: false, resize: false })
    expect(() => root.bash.start(root.bash.resolve({ command: 'true', interactive: true }))).toThrow(
      expect.objectContaining({ code: BASH_ERROR.interactiveUnsupported }),
    )
  })

  it('sandbox_permissions offers the modes wider than the narrowest, as the executor lists them', () => {
    const base = { interactive: true }
    const enumOf = (sandboxModes: string[]) => {
      const shape = bashParametersFor({ ...base, sandboxModes }).shape as Record<string, { unwrap?: () => { options: string[] } }>
      return shape.sandbox_permissions?.unwrap?.().options
    }
    expect(enumOf([])).toBeUndefined()
    expect(enumOf(['read-only'])).toBeUndefined()
    expect(enumOf(['read-only', 'workspace-write', 'danger-full-access'])).toEqual(['workspace-write', 'danger-full-access'])
    expect(enumOf(['workspace-write', 'danger-full-access'])).toEqual(['danger-full-access'])
  })
})
