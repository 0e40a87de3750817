import { PassThrough } from 'node:stream'
import { Context } from 'cordis'
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js'
import { afterEach, describe, expect, it } from 'vitest'
import { Agents } from '@deepseek-ai/dsh-agent'
import type {} from '@deepseek-ai/dsh-bash'
import { LocalExecutor } from '@deepseek-ai/dsh-bash-local'
import { ToolBash } from '@deepseek-ai/dsh-tool-bash'
import { ToolRegistry } from '@deepseek-ai/dsh-tools'
import { DEFAULT_SERVER_INFO, McpHost, PROTOCOL_VERSIONS, serveStdio, StdioFront } from '../src/index.js'

const cleanups: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** A stdio session over in-memory pipes whose tools load only after `bind()`. */
function pipes() {
  const stdin = new PassThrough()
  const stdout = new PassThrough()
  const messages: Record<string, unknown>[] = []
  let buffer = ''
  stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString()
    let nl: number
    while ((nl = buffer.indexOf('\n')) !== -1) {
      messages.push(JSON.parse(buffer.slice(0, nl)))
      buffer = buffer.slice(nl + 1)
    }
  })
  const send = (message: unknown) => stdin.write(`${JSON.stringify(message)}\n`)
  const wait = async (check: () => boolean) => {
    for (let i = 0; i < 500 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10))
    expect(check()).toBe(true)
  }
  return { stdin, stdout, messages, send, wait }
}

const initialize = (id: number, protocolVersion: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion, capabilities: { roots: {} }, clientInfo: { name: 'test', version: '1' } },
})

describe('the stdio front', () => {
  it('negotiates exactly the protocol versions of the SDK in use', () => {
    expect([...PROTOCOL_VERSIONS]).toEqual(SUPPORTED_PROTOCOL_VERSIONS)
    expect(PROTOCOL_VERSIONS[0]).toBe(LATEST_PROTOCOL_VERSION)
  })

  it.each([['2025-06-18'], ['1999-01-01']])(
    'answers initialize (%s) before the tools load, once, exactly as the SDK would; later requests wait for the tools',
    async (version) => {
      const io = pipes()
      const logs: string[] = []
      const front = new StdioFront({ stdin: io.stdin, stdout: io.stdout, early: { serverInfo: DEFAULT_SERVER_INFO, instructions: 'Use the tools.' }, log: (m) => void logs.push(m) })
      io.send(initialize(1, version))
      await io.wait(() => io.messages.length === 1)
      const expected = version === '1999-01-01' ? LATEST_PROTOCOL_VERSION : version
      expect(io.messages[0]).toEqual({
        jsonrpc: '2.0',
        id: 1,
        result: { protocolVersion: expected, capabilities: { tools: {}, logging: {}, resources: {} }, serverInfo: { name: 'dsh-bash', version: '0.1.0' }, instructions: 'Use the tools.' },
      })
      // The SDK server and the tools come later; what arrives meanwhile waits.
      io.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
      io.send({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} })
      const host = new McpHost(undefined, { log: (m) => void logs.push(m), instructions: 'Use the tools.' })
      const handle = await serveStdio(host, { front })
      cleanups.push(() => handle.close())
      const ctx = new Context()
      ctx.plugin(ToolRegistry)
      ctx.plugin(Agents)
      ctx.plugin(LocalExecutor, { graceMs: 300 })
      ctx.plugin(ToolBash)
      ctx.plugin({ name: 'test-mcp', inject: ['tools', 'agents'], apply: (c: Context) => host.bind(c) })
      cleanups.push(() => ctx.bash?.shutdown())
      await io.wait(() => io.messages.some((m) => m.id === 2))
      const listed = io.messages.find((m) => m.id === 2) as { result: { tools: { name: string }[] } }
      expect(listed.result.tools.map((t) => t.name)).toEqual(['bash', 'bash_output', 'bash_kill', 'bash_input'])
      // One answer to initialize: the SDK's own was dropped, and it said the same.
      expect(io.messages.filter((m) => m.id === 1)).toHaveLength(1)
      expect(logs.filter((m) => m.includes('differed'))).toEqual([])
      // The SDK server knows the client (from the same request).
      expect(handle.session.server.getClientCapabilities()).toEqual({ roots: {} })
    },
  )

  it('a malformed initialize is left to the SDK: one answer, its error', async () => {
    const io = pipes()
    const front = new StdioFront({ stdin: io.stdin, stdout: io.stdout, early: { serverInfo: DEFAULT_SERVER_INFO } })
    io.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 7 } })
    const host = new McpHost(undefined, { log: () => {} })
    const handle = await serveStdio(host, { front })
    cleanups.push(() => handle.close())
    await io.wait(() => io.messages.length >= 1)
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(io.messages).toHaveLength(1)
    expect(io.messages[0]).toMatchObject({ id: 1, error: { code: expect.any(Number) } })
  })
})
