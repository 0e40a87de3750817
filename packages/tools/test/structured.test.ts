import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import type { ToolDefinition, ToolResult } from '../src/index.js'
import { bashLike, createContext } from './helpers.js'

const facts = z.object({ status: z.enum(['done', 'error']), code: z.string().nullable(), length: z.number().int().nullable() })

/** A tool with an outputSchema whose own results carry facts; `bad` returns facts that do not fit. */
function factTool(extra: Partial<ToolDefinition<typeof bashLike>> = {}): ToolDefinition<typeof bashLike> {
  return {
    name: 'facts',
    description: 'Reports facts.',
    parameters: bashLike,
    outputSchema: facts,
    annotations: { title: 'Facts', readOnlyHint: true, openWorldHint: false },
    structureOf: (result: ToolResult) => ({ status: 'error', code: typeof result.meta?.code === 'string' ? result.meta.code : null, length: null }),
    execute: (args) => {
      if (args.command === 'throw') throw Object.assign(new Error('boom'), { code: 'X_BOOM' })
      if (args.command === 'bad') return { content: [{ type: 'text', text: 'bad' }], isError: false, structured: { status: 'done', code: null, length: 'long' } }
      return { content: [{ type: 'text', text: `ran ${args.command}` }], isError: false, structured: { status: 'done', code: null, length: args.command.length } }
    },
    ...extra,
  }
}

describe('structured results (outputSchema, structureOf) and annotations', () => {
  it('publishes the output schema and the annotations; a tool without them publishes neither', () => {
    const ctx = createContext()
    ctx.tools.register(factTool())
    ctx.tools.register({ name: 'plain', description: 'x', parameters: bashLike, execute: () => 'x' })
    const [withFacts, plain] = ctx.tools.schemas()
    expect(withFacts.outputSchema).toMatchObject({ type: 'object', required: ['status', 'code', 'length'], properties: { status: { enum: ['done', 'error'] } } })
    expect(withFacts.annotations).toEqual({ title: 'Facts', readOnlyHint: true, openWorldHint: false })
    expect(plain).not.toHaveProperty('outputSchema')
    expect(plain).not.toHaveProperty('annotations')
  })

  it('an outputSchema without structureOf is refused at registration', () => {
    const ctx = createContext()
    expect(() => ctx.tools.register({ ...factTool(), structureOf: undefined })).toThrow('tool "facts" has an outputSchema but no structureOf function')
  })

  it("the tool's own facts, and structureOf's for every error of the pipeline or the tool", async () => {
    const ctx = createContext()
    ctx.tools.register(factTool())
    expect(await ctx.tools.execute({ callId: '1', name: 'facts', arguments: { command: 'ls' } })).toEqual({
      content: [{ type: 'text', text: 'ran ls' }],
      isError: false,
      structured: { status: 'done', code: null, length: 2 },
    })
    const invalid = await ctx.tools.execute({ callId: '2', name: 'facts', arguments: { command: 3 } })
    expect(invalid).toMatchObject({ isError: true, structured: { status: 'error', code: 'DSH_INVALID_ARGUMENTS', length: null } })
    const thrown = await ctx.tools.execute({ callId: '3', name: 'facts', arguments: { command: 'throw' } })
    expect(thrown).toMatchObject({ isError: true, structured: { status: 'error', code: 'X_BOOM', length: null } })
    ctx.tools.onPreExecute(() => ({ kind: 'deny', reason: 'no' }))
    const denied = await ctx.tools.execute({ callId: '4', name: 'facts', arguments: { command: 'ls' } })
    expect(denied).toMatchObject({ content: [{ text: 'Error: no' }], structured: { status: 'error', code: 'DSH_DENIED' } })
  })

  it('facts that do not fit the schema become a contract error, never invalid data', async () => {
    const ctx = createContext()
    ctx.tools.register(factTool())
    const result = await ctx.tools.execute({ callId: '1', name: 'facts', arguments: { command: 'bad' } })
    expect(result.isError).toBe(true)
    expect(result.content[0].text).toMatch(/^Error: the tool "facts" returned structured content that does not fit its outputSchema: /)
    expect(result.structured).toEqual({ status: 'error', code: 'DSH_PIPELINE_CONTRACT', length: null })
  })

  it('post-execute: a text replacement keeps the facts, an error replacement gets structureOf, append keeps them', async () => {
    const ctx = createContext()
    ctx.tools.register(factTool())
    let action: 'redact' | 'block' | 'append' = 'redact'
    ctx.tools.onPostExecute(() =>
      action === 'redact'
        ? { kind: 'replace', result: 'redacted' }
        : action === 'block'
          ? { kind: 'replace', result: { content: [{ type: 'text', text: 'Error: blocked' }], isError: true, meta: { code: 'X_BLOCKED' } } }
          : { kind: 'append', text: 'note' },
    )
    expect((await ctx.tools.execute({ callId: '1', name: 'facts', arguments: { command: 'ls' } })).structured).toEqual({ status: 'done', code: null, length: 2 })
    action = 'block'
    expect((await ctx.tools.execute({ callId: '2', name: 'facts', arguments: { command: 'ls' } })).structured).toEqual({ status: 'error', code: 'X_BLOCKED', length: null })
    action = 'append'
    const appended = await ctx.tools.execute({ callId: '3', name: 'facts', arguments: { command: 'ls' } })
    expect(appended).toMatchObject({ content: [{ text: 'ran ls' }, { text: 'note' }], structured: { status: 'done', length: 2 } })
  })

  it('a middleware veto without facts gets structureOf; observers see the final facts', async () => {
    const ctx = createContext()
    ctx.tools.register(factTool())
    ctx.tools.useMiddleware(async () => ({ content: [{ type: 'text', text: 'vetoed' }], isError: true }))
    const seen: unknown[] = []
    ctx.tools.onResult((_, result) => seen.push(result.structured))
    const result = await ctx.tools.execute({ callId: '1', name: 'facts', arguments: { command: 'ls' } })
    expect(result.structured).toEqual({ status: 'error', code: null, length: null })
    expect(seen).toEqual([{ status: 'error', code: null, length: null }])
  })
})
