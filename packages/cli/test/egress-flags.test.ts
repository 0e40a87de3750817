import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parseAgentArgs, parseMcpArgs, parseReplArgs, UsageError } from '../src/args.js'
import { EXECUTOR_KINDS, EXECUTORS } from '../src/executors.js'
import { AGENT_HELP, MCP_HELP, REPL_HELP } from '../src/help.js'
import { limitDefaults } from '../src/limit-defaults.js'
import { ROOT } from './helpers.js'

// Issue 27: the egress, read-mask and limit flags — in --help, in the README's executor table, bad
// values are usage errors naming the flag, and what each becomes in the executor's config.

const NEW_FLAGS = ['allow-domain', 'deny-domain', 'add-host', 'deny-read', 'allow-read', 'limit-memory', 'limit-pids', 'limit-cpu', 'limit-tmp']

function usage(args: string[]): string {
  try {
    parseMcpArgs(args)
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError)
    return (error as Error).message
  }
  throw new Error(`no usage error for ${args.join(' ')}`)
}

describe('the flags of issue 27', () => {
  it('are in every help and in the README\'s executor table, with the kinds that take them', () => {
    const readme = readFileSync(join(ROOT, 'packages/cli/README.md'), 'utf8')
    for (const flag of NEW_FLAGS) {
      for (const help of [MCP_HELP, REPL_HELP, AGENT_HELP]) expect(help, flag).toContain(`--${flag} `)
      const kinds = EXECUTORS.filter((kind) => Object.hasOwn(EXECUTOR_KINDS[kind].flags, flag))
      const row = readme.split('\n').find((line) => line.startsWith(`| \`--${flag} `))
      expect(row, `README row of --${flag}`).toBeDefined()
      expect(row!.split(' | ')[1]).toBe(kinds.join(', '))
    }
    expect(MCP_HELP).toContain(`--limit-memory ${String(limitDefaults().memory / 2 ** 30).replace(/\.0$/, '')}G`)
  })

  it('bad values are usage errors naming the flag', () => {
    const sandbox = ['--executor', 'sandbox']
    expect(usage([...sandbox, '--allow-domain', 'http://x.com'])).toBe('--allow-domain: expected a host name, *.domain or an IP address, got "http://x.com"')
    expect(usage([...sandbox, '--deny-domain', '*'])).toBe('--deny-domain: expected a host name, *.domain or an IP address, got "*"')
    expect(usage([...sandbox, '--add-host', 'db.test'])).toBe('--add-host: expected NAME:IP, got "db.test"')
    expect(usage([...sandbox, '--add-host', 'db.test:999.1.1.1'])).toBe('--add-host: expected NAME:IP, got "db.test:999.1.1.1"')
    expect(usage([...sandbox, '--deny-read', ''])).toBe('--deny-read: expected a path, got ""')
    expect(usage([...sandbox, '--allow-domain', 'a.test', '--network', 'on'])).toBe(
      '--network: not with --allow-domain, --deny-domain or --add-host (they turn on egress through the proxy, with the network otherwise off)',
    )
    expect(usage(['--limit-memory', '3x'])).toBe('--limit-memory: expected a size of at least 16M such as 512M or 4G, or none, got "3x"')
    expect(usage(['--limit-memory', '1M'])).toBe('--limit-memory: expected a size of at least 16M such as 512M or 4G, or none, got "1M"')
    expect(usage(['--limit-pids', '0'])).toBe('--limit-pids: expected a whole number of processes (at least 1) or none, got "0"')
    expect(usage(['--limit-cpu', 'half'])).toBe('--limit-cpu: expected a number of CPU cores such as 1 or 1.5, or none, got "half"')
    expect(usage([...sandbox, '--limit-tmp', '0'])).toBe('--limit-tmp: expected a size of at least 1M such as 512M or 4G, or none, got "0"')
    expect(usage(['--limit-tmp', '64M'])).toBe('--limit-tmp: only used with --executor sandbox or container or kubernetes')
    expect(usage(['--executor', 'kubernetes', '--image', 'x', '--limit-pids', '5'])).toBe('--limit-pids: only used with --executor local or sandbox or ssh or container')
  })

  it('become the executor config: egress lists and hosts, masks, limits; none removes a default; the token file is masked', () => {
    const config = parseMcpArgs([
      '--executor', 'sandbox',
      '--allow-domain', 'Allowed.TEST', '--allow-domain', '*.example.com', '--deny-domain', 'bad.example.com',
      '--add-host', 'allowed.test:127.0.0.1', '--add-host', 'v6.test:[::1]',
      '--deny-read', 'secrets', '--deny-read', '~/.vault', '--allow-read', '~/.aws',
      '--limit-memory', '1G', '--limit-pids', 'none', '--limit-cpu', '1.5', '--limit-tmp', '64M',
      '--http', '127.0.0.1:0', '--token-file', 'token.txt',
    ]).executorConfig
    expect(config).toMatchObject({
      network: { allow: ['allowed.test', '*.example.com'], deny: ['bad.example.com'], hosts: { 'allowed.test': '127.0.0.1', 'v6.test': '::1' } },
      denyRead: [resolve('secrets'), '~/.vault', resolve('token.txt')],
      allowRead: ['~/.aws'],
      limits: { memory: 2 ** 30, cpu: 1.5, tmp: 64 * 2 ** 20 },
    })
    // `none` keeps the default out; the defaults fill what no flag set (mcp and agent, local and sandbox).
    expect((config.limits as Record<string, unknown>).pids).toBeUndefined()
    expect(parseAgentArgs(['--base-url', 'http://127.0.0.1:1/v1', '--model', 'm', 'hi'], {}).executorConfig.limits).toEqual({ memory: limitDefaults().memory, pids: 1024 })
    expect(parseReplArgs([]).executorConfig.limits).toBeUndefined()
    // Container and Kubernetes keys.
    expect(parseMcpArgs(['--executor', 'container', '--image', 'x', '--limit-memory', '512M', '--limit-pids', '64', '--limit-cpu', '0.5', '--limit-tmp', 'none']).executorConfig).toMatchObject({
      memoryBytes: 512 * 2 ** 20,
      pidsLimit: 64,
      cpus: 0.5,
      tmpBytes: 0,
    })
    expect(parseMcpArgs(['--executor', 'kubernetes', '--image', 'x', '--limit-memory', '1G', '--limit-tmp', '16M']).executorConfig).toMatchObject({
      limits: { memory: String(2 ** 30), cpu: '2' },
      tmpBytes: 16 * 2 ** 20,
    })
  })
})
