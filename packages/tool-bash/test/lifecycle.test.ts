import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { LocalExecutor } from '@deepseek-ai/dsh-bash-local'
import { ToolRegistry } from '@deepseek-ai/dsh-tools'
import { ToolBash } from '../src/index.js'
import { settle } from './harness.js'

describe('plugin lifecycle', () => {
  it('stays pending until an executor is loaded, and its tools vanish when the executor or it unloads', async () => {
    const root = new Context()
    root.plugin(ToolRegistry)
    const toolBash = root.plugin(ToolBash)
    await settle()
    expect(root.tools.names()).toEqual([])
    const executor = root.plugin(LocalExecutor, {})
    await settle()
    expect(root.tools.names()).toEqual(['bash', 'bash_output', 'bash_kill', 'bash_input'])
    const bash = root.bash
    executor.dispose()
    await bash.shutdown()
    await settle()
    expect(root.tools.names()).toEqual([])
    const executor2 = root.plugin(LocalExecutor, {})
    await settle()
    expect(root.tools.names()).toEqual(['bash', 'bash_output', 'bash_kill', 'bash_input'])
    toolBash.dispose()
    await settle()
    expect(root.tools.names()).toEqual([])
    await root.bash.shutdown()
    executor2.dispose()
  })

  it('calls go to the executor loaded now: the one resolved per apply never outlives a swap', async () => {
    const root = new Context()
    root.plugin(ToolRegistry)
    root.plugin(ToolBash)
    const first = root.plugin(LocalExecutor, {})
    await settle()
    const firstBash = root.bash
    const call = async () => {
      const result = await root.tools.execute({ callId: 'c', name: 'bash', arguments: { command: 'true', description: 'd', run_in_background: true } })
      expect(result.isError).toBe(false)
      return /bash-\d+/.exec(result.content[0].text)![0]
    }
    const before = await call()
    expect(firstBash.get(before)).toBeDefined()
    first.dispose()
    await firstBash.shutdown()
    await settle()
    const second = root.plugin(LocalExecutor, {})
    await settle()
    const secondBash = root.bash
    expect(secondBash).not.toBe(firstBash)
    const after = await call()
    // The task is in the new executor's table; the old one took nothing after its disposal.
    expect(secondBash.get(after)).toBeDefined()
    expect(firstBash.list().map((task) => task.id)).toEqual([before])
    await secondBash.shutdown()
    second.dispose()
  })

  it('publishes JSON schemas with the contract arguments only', async () => {
    const root = new Context()
    root.plugin(ToolRegistry)
    root.plugin(LocalExecutor, {})
    root.plugin(ToolBash)
    await settle()
    const [bash, output, kill, input] = root.tools.schemas()
    expect(Object.keys(bash.parameters.properties as object)).toEqual(['command', 'description', 'timeoutMs', 'workdir', 'run_in_background', 'interactive'])
    expect(input.name).toBe('bash_input')
    expect(Object.keys(input.parameters.properties as object)).toEqual(['task_id', 'text', 'wait_ms', 'until', 'ask_user'])
    expect(Object.keys(output.parameters.properties as object)).toEqual(['task_id', 'wait_ms', 'until', 'offset', 'length', 'stream'])
    expect(Object.keys(kill.parameters.properties as object)).toEqual(['task_id'])
    expect(input.parameters.required).toEqual(['task_id'])
    expect(bash.parameters.required).toEqual(['command', 'description'])
    expect(output.parameters.required).toEqual(['task_id'])
    expect(kill.parameters.required).toEqual(['task_id'])
    for (const fragment of ['workdir', 'run_in_background', 'bash_output', 'bash_kill', '[exit code: N]', 'full output', 'interactive', 'bash_input', '--yes']) {
      expect(bash.description).toContain(fragment)
    }
    await root.bash.shutdown()
  })
})
