import { describe, expect, it } from 'vitest'
import { checkMessage, LineSplitter, sniffId } from '../src/protocol.js'

describe('checkMessage', () => {
  it.each([
    [{ jsonrpc: '2.0', id: 1, method: 'tools/list' }],
    [{ jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 'bash', arguments: { command: 'x' } } }],
    [{ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'bash' } }],
    [{ jsonrpc: '2.0', method: 'notifications/initialized' }],
    [{ jsonrpc: '2.0', id: 3, result: {} }],
  ])('passes %j', (message) => {
    expect(checkMessage(message)).toEqual({ pass: true })
  })

  it.each([
    [[1, 2], null, -32600, 'invalid request: JSON-RPC batches are not supported; send one message per line'],
    ['hi', null, -32600, 'invalid request: expected a JSON-RPC message object, got a string'],
    [{ jsonrpc: '1.0', id: 1, method: 'x' }, 1, -32600, 'invalid request: "jsonrpc" must be "2.0"'],
    [{ jsonrpc: '2.0', id: 1, method: 5 }, 1, -32600, 'invalid request: "method" must be a string, got a number'],
    [{ jsonrpc: '2.0', id: null, method: 'x' }, null, -32600, 'invalid request: "id" must be a string or a number, got null'],
    [{ jsonrpc: '2.0', id: 1, method: 'x', params: [1] }, 1, -32602, 'invalid params: "params" must be an object, got an array'],
    [{ jsonrpc: '2.0', id: 1, method: 'x', params: null }, 1, -32602, 'invalid params: "params" must be an object, got null'],
    [{ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 3 } }, 1, -32602, 'invalid params: "name" must be a string, got a number'],
    [{ jsonrpc: '2.0', id: 'q', method: 'tools/call', params: { name: 'bash', arguments: 'x' } }, 'q', -32602, 'invalid params: "arguments" must be an object, got a string'],
  ])('refuses %j with a one-line error', (message, id, code, text) => {
    expect(checkMessage(message)).toEqual({ pass: false, refusal: { id, code, message: text } })
  })

  it('drops a malformed notification without an answer', () => {
    expect(checkMessage({ jsonrpc: '2.0', method: 'notifications/x', params: 'bad' })).toEqual({ pass: false })
  })
})

describe('LineSplitter', () => {
  const split = (max: number, chunks: string[]) => {
    const lines: string[] = []
    const oversized: string[] = []
    const splitter = new LineSplitter(max, (line) => lines.push(line), (head) => oversized.push(head))
    for (const chunk of chunks) splitter.push(Buffer.from(chunk))
    return { lines, oversized }
  }

  it('splits across chunk boundaries, strips \\r, skips blank lines', () => {
    expect(split(100, ['{"a"', ':1}\r\n\n{"b":2}\n{"c"', ':3}\n'])).toEqual({ lines: ['{"a":1}', '{"b":2}', '{"c":3}'], oversized: [] })
  })

  it('refuses a line over the limit once, skips it to its newline, and goes on', () => {
    const { lines, oversized } = split(10, ['{"id":7,"x":"', 'y'.repeat(30), 'zzz', '"}\n{"ok":1}\n'])
    expect(oversized).toHaveLength(1)
    expect(sniffId(oversized[0])).toBe(7)
    expect(lines).toEqual(['{"ok":1}'])
  })

  it('a line of exactly the limit passes', () => {
    expect(split(10, ['0123456789\n']).lines).toEqual(['0123456789'])
    expect(split(10, ['0123456789A\n']).oversized).toHaveLength(1)
  })
})

describe('sniffId', () => {
  it('reads a number or string id from the start of a line, else null', () => {
    expect(sniffId('{"jsonrpc":"2.0","id":42,"method"')).toBe(42)
    expect(sniffId('{"id": "abc-1", "method"')).toBe('abc-1')
    expect(sniffId('{"method":"x","params":{"command":"')).toBeNull()
  })
})
