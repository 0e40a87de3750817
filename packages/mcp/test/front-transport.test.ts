import { PassThrough } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { FrontTransport } from '../src/front-transport.js'
import { StdioFront } from '../src/front.js'

/** A front on in-memory pipes and the transport it feeds; what reaches stdout, line by line. */
function setup(early = false) {
  const stdin = new PassThrough()
  const stdout = new PassThrough()
  const written: unknown[] = []
  stdout.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) if (line) written.push(JSON.parse(line))
  })
  const logs: string[] = []
  const front = new StdioFront({ stdin, stdout, ...(early ? { early: { serverInfo: { name: 'x', version: '1' } } } : {}) })
  const transport = new FrontTransport(front, stdout, (m) => logs.push(m))
  const received: unknown[] = []
  const errors: Error[] = []
  transport.onmessage = (message) => received.push(message)
  transport.onerror = (error) => errors.push(error)
  front.attach((_line, message) => transport.deliver(message))
  return { stdin, front, transport, written, received, errors, logs }
}

const tick = () => new Promise((resolve) => setImmediate(resolve))

describe('FrontTransport (stdio: the front parses once, the SDK server gets the object)', () => {
  it('hands a well-formed message on as the SDK schema reads it', async () => {
    const { stdin, received, errors } = setup()
    const call = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'bash', arguments: { command: 'true' } } }
    stdin.write(`${JSON.stringify(call)}\n`)
    await tick()
    expect(errors).toEqual([])
    expect(received).toEqual([call])
  })

  it('drops what the SDK schema rejects and reports it to onerror, as the SDK transport did', async () => {
    const { stdin, received, errors } = setup()
    // Passes the front's checks, but the SDK's request schema is strict: an unknown member fails it.
    stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', extra: true })}\n`)
    await tick()
    expect(received).toEqual([])
    expect(errors).toHaveLength(1)
  })

  it("writes answers as JSON lines, except the SDK's own answer to an initialize the front answered", async () => {
    const { stdin, transport, written, logs } = setup(true)
    stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } } })}\n`)
    await tick()
    expect(written).toHaveLength(1) // the front's early answer
    await transport.send({ jsonrpc: '2.0', id: 1, result: { differs: true } })
    await transport.send({ jsonrpc: '2.0', id: 2, result: {} })
    await tick()
    expect(written).toEqual([expect.objectContaining({ id: 1 }), { jsonrpc: '2.0', id: 2, result: {} }])
    expect(logs).toEqual([expect.stringContaining('the early initialize answer differed')])
  })

  it('delivers nothing once closed, and calls onclose once', async () => {
    const { stdin, transport, received } = setup()
    let closes = 0
    transport.onclose = () => closes++
    await transport.close()
    await transport.close()
    stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'ping' })}\n`)
    await tick()
    expect(received).toEqual([])
    expect(closes).toBe(1)
  })
})
