import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { parseConfig, positiveInt } from '../src/index.js'

describe('parseConfig messages', () => {
  const schema = z
    .object({
      timeoutMs: positiveInt('timeoutMs').optional(),
      name: z.string().optional(),
      tags: z.array(z.string()).max(1).optional(),
      hosts: z
        .array(z.object({ port: z.number().max(9, 'port must be at most 9'), user: z.string() }).strict())
        .optional(),
    })
    .strict()
  const message = (input: unknown) => {
    try {
      parseConfig(schema, input, 'test')
    } catch (error) {
      return (error as Error & { code?: string }).message
    }
    return 'parsed'
  }

  it('keeps a top-level message of our own as it is', () => {
    expect(message({ timeoutMs: -1 })).toBe('invalid test config: timeoutMs must be positive')
    expect(message({ timeoutMs: 'x' })).toBe('invalid test config: timeoutMs must be a number')
  })

  it("prefixes a nested message of our own with the path (it names only its property)", () => {
    expect(message({ hosts: [{ port: 10, user: 'u' }] })).toBe('invalid test config: hosts.0.port: port must be at most 9')
  })

  it("names the key of zod's own issues, whatever its English says", () => {
    expect(message({ name: 1 })).toBe('invalid test config: name must be a string')
    expect(message({ hosts: [{ port: 1 }] })).toBe('invalid test config: hosts.0.user must be a string')
    expect(message({ tags: ['a', 'b'] })).toMatch(/^invalid test config: tags: \S/)
    expect(message({ nope: 1 })).toBe('invalid test config: unknown key(s) "nope"')
    expect(message({ hosts: [{ port: 1, user: 'u', x: 1 }] })).toBe('invalid test config: unknown key(s) "x"')
  })

  it('a message of our own that happens to start like zod\'s is still ours', () => {
    const own = z.object({ name: z.string({ error: 'name must be a string, really' }) }).strict()
    expect(() => parseConfig(own, { name: 1 }, 'test')).toThrow('invalid test config: name must be a string, really')
  })
})
