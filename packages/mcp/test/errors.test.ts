import { PassThrough } from 'node:stream'
import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { MCP_ERROR, McpHost, serveHttp, StdioFront } from '../src/index.js'

/** What `fn` throws (undefined when it does not). */
function thrown(fn: () => unknown): unknown {
  try {
    fn()
  } catch (error) {
    return error
  }
  return undefined
}

describe('MCP errors carry stable codes (messages unchanged)', () => {
  it('invalid options', async () => {
    const ctx = new Context()
    expect(thrown(() => new McpHost(ctx, { cwd: 'relative' }))).toMatchObject({
      code: MCP_ERROR.invalidOptions,
      message: 'cwd must be an absolute path, got "relative"',
    })
    expect(thrown(() => new StdioFront({ stdin: new PassThrough(), stdout: new PassThrough(), maxLineBytes: 0 }))).toMatchObject({
      code: 'DSH_MCP_INVALID_OPTIONS',
      message: 'maxLineBytes must be a positive integer, got 0',
    })
    const host = new McpHost(ctx, {})
    await expect(serveHttp(host, { token: '' })).rejects.toMatchObject({ code: MCP_ERROR.invalidOptions, message: 'a bearer token is required' })
  })
})
