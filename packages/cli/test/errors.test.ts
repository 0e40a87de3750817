import { describe, expect, it } from 'vitest'
import { CLI_ERROR, parseMcpArgs, parseHostPort } from '../src/index.js'

/** What `fn` throws (undefined when it does not). */
function thrown(fn: () => unknown): unknown {
  try {
    fn()
  } catch (error) {
    return error
  }
  return undefined
}

describe('CLI errors carry stable codes', () => {
  it('a command-line mistake is DSH_CLI_USAGE', () => {
    expect(thrown(() => parseMcpArgs(['--no-such-flag']))).toMatchObject({ code: CLI_ERROR.usage })
    expect(thrown(() => parseHostPort('nonsense:port'))).toMatchObject({ code: 'DSH_CLI_USAGE' })
  })
})
