import { describe, expect, it } from 'vitest'
import { CLI_ERROR, parseMcpArgs, parseHostPort } from '../src/index.js'

describe('CLI errors carry stable codes', () => {
  it('a command-line mistake is DSH_CLI_USAGE', () => {
    expect(() => parseMcpArgs(['--no-such-flag'])).toThrow(expect.objectContaining({ code: CLI_ERROR.usage }))
    expect(() => parseHostPort('nonsense:port')).toThrow(expect.objectContaining({ code: 'DSH_CLI_USAGE' }))
  })
})
