import { describe, expect, it } from 'vitest'
import { parseMcpArgs, UsageError } from '../src/args.js'
import { loadExecutor } from '../src/compose.js'
import { EXECUTOR_KINDS, EXECUTORS, executorFlagSpec, executorKind } from '../src/executors.js'
import { MCP_HELP, REPL_HELP } from '../src/help.js'

// Issue #17: the executor kinds are one table; these checks hold for any kind added to it.
describe('the executor table', () => {
  it('every kind loads its plugin class from its package on demand', async () => {
    for (const kind of EXECUTORS) {
      const plugin = await loadExecutor(kind)
      expect(typeof plugin, kind).toBe('function')
      expect((plugin as { name: string }).name, kind).toBe(executorKind(kind).export)
    }
  })

  it('--executor accepts exactly the kinds of the table, and the help lists each with its flags', () => {
    expect(EXECUTORS).toEqual(['local', 'sandbox', 'ssh', 'container', 'kubernetes'])
    expect(() => parseMcpArgs(['--executor', 'pods'])).toThrow(`--executor: expected one of ${EXECUTORS.join(', ')}, got "pods"`)
    for (const help of [MCP_HELP, REPL_HELP]) {
      expect(help).toContain('--executor KIND         local (default), sandbox, ssh, container or kubernetes')
      for (const kind of EXECUTORS) for (const name of Object.keys(EXECUTOR_KINDS[kind].flags)) expect(help).toMatch(new RegExp(`--${name} .*\\n?.*`))
    }
  })

  it("every executor flag is refused with every kind that does not take it, naming the kinds that do", () => {
    for (const flag of Object.keys(executorFlagSpec)) {
      const takers = EXECUTORS.filter((kind) => Object.hasOwn(EXECUTOR_KINDS[kind].flags, flag))
      expect(takers.length, flag).toBeGreaterThan(0)
      for (const kind of EXECUTORS.filter((k) => !takers.includes(k))) {
        const args = ['--executor', kind, `--${flag}`, 'x', ...(kind === 'ssh' ? ['--workdir', '/srv', '--executor-config', '{"hosts":[]}'] : [])]
        let error: unknown
        try {
          parseMcpArgs(args)
        } catch (e) {
          error = e
        }
        expect(error, `${kind} --${flag}`).toBeInstanceOf(UsageError)
        expect((error as Error).message).toBe(`--${flag}: only used with --executor ${takers.join(' or ')}`)
      }
    }
  })
})
