import { once } from 'node:events'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { AGENT_ERROR, modelFailureFacts, OpenAIChatAdapter, openAIOptionsFromEnv } from '../src/index.js'
import { agentOptions, createContext, registerAdd } from './helpers.js'

interface Received {
  method: string
  url: string
  headers: IncomingMessage['headers']
  body: any
}

let server: Server | undefined

afterEach(async () => {
  if (server) {
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
    server = undefined
  }
})

/** A tiny chat-completions server on 127.0.0.1 that answers each POST with the next scripted response. */
async function serve(responses: ((received: Received) => { status?: number; body: unknown })[]) {
  const received: Received[] = []
  const answer = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const text = Buffer.concat(chunks).toString('utf8')
    const entry: Received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: text ? JSON.parse(text) : undefined }
    received.push(entry)
    const respond = responses[received.length - 1]
    const { status = 200, body } = respond ? respond(entry) : { status: 500, body: { error: 'script exhausted' } }
    res.writeHead(status, { 'content-type': 'application/json' })
    res.end(typeof body === 'string' ? body : JSON.stringify(body))
  }
  // A request that fails here (an aborted body, bad JSON) ends its connection instead of
  // becoming an unhandled rejection in the test run.
  server = createServer((req, res) => {
    answer(req, res).catch((error: Error) => res.destroy(error))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return { baseUrl: `http://127.0.0.1:${port}/v1`, received }
}

function completion(message: Record<string, unknown>) {
  return { id: 'chatcmpl-1', object: 'chat.completion', model: 'test-model', choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: 'stop' }] }
}

describe('OpenAIChatAdapter', () => {
  it('round-trips tool calls through a real agent loop', async () => {
    const { baseUrl, received } = await serve([
      () => ({
        body: completion({
          content: null,
          tool_calls: [{ id: 'call_abc', type: 'function', function: { name: 'add', arguments: '{"a":20,"b":22}' } }],
        }),
      }),
      () => ({ body: completion({ content: 'The answer is 42.' }) }),
    ])
    const ctx = createContext()
    const calls = registerAdd(ctx)
    const adapter = new OpenAIChatAdapter({ baseUrl: `${baseUrl}/`, model: 'test-model', apiKey: 'sk-test', headers: { 'x-extra': 'yes' } })
    const agent = ctx.agents.create(agentOptions({ adapter, system: 'You are terse.' }))
    agent.inject([{ type: 'text', text: 'a notice' }], { source: { kind: 'plugin', plugin: 'tool-bash' } })

    expect(await agent.run('what is 20+22?')).toBe('The answer is 42.')
    expect(calls).toEqual([expect.objectContaining({ a: 20, b: 22 })])
    expect(received).toHaveLength(2)

    for (const request of received) {
      expect(request.method).toBe('POST')
      expect(request.url).toBe('/v1/chat/completions')
      expect(request.headers.authorization).toBe('Bearer sk-test')
      expect(request.headers['content-type']).toBe('application/json')
      expect(request.headers['x-extra']).toBe('yes')
      expect(request.body.model).toBe('test-model')
      expect(request.body.tools).toEqual([
        {
          type: 'function',
          function: {
            name: 'add',
            description: 'Adds two numbers.',
            parameters: {
              type: 'object',
              properties: { a: { type: 'number' }, b: { type: 'number' } },
              required: ['a', 'b'],
            },
          },
        },
      ])
    }
    expect(received[0].body.messages).toEqual([
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'a notice' },
      { role: 'user', content: 'what is 20+22?' },
    ])
    expect(received[1].body.messages).toEqual([
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'a notice' },
      { role: 'user', content: 'what is 20+22?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_abc', type: 'function', function: { name: 'add', arguments: '{"a":20,"b":22}' } }],
      },
      { role: 'tool', tool_call_id: 'call_abc', content: '42' },
    ])
  })

  it('maps a plain reply and omits tools and Authorization when there are none', async () => {
    const { baseUrl, received } = await serve([() => ({ body: completion({ content: 'hello' }) })])
    const adapter = new OpenAIChatAdapter({ baseUrl, model: 'm' })
    const reply = await adapter.next({ messages: [{ role: 'user', content: 'hi' }], tools: [] })
    expect(reply).toEqual({ text: 'hello', toolCalls: [] })
    expect(received[0].headers.authorization).toBeUndefined()
    expect(received[0].body).toEqual({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })
  })

  it('accepts content given as parts and arguments given as an object', async () => {
    const { baseUrl } = await serve([
      () => ({
        body: completion({
          content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }],
          tool_calls: [{ id: 'c', type: 'function', function: { name: 'add', arguments: { a: 1, b: 2 } } }],
        }),
      }),
    ])
    const reply = await new OpenAIChatAdapter({ baseUrl, model: 'm' }).next({ messages: [], tools: [] })
    expect(reply).toEqual({ text: 'ab', toolCalls: [{ id: 'c', name: 'add', arguments: '{"a":1,"b":2}' }] })
  })

  it('HTTP errors carry the status and an excerpt of the body', async () => {
    const { baseUrl } = await serve([() => ({ status: 401, body: { error: { message: 'invalid api key' } } })])
    const adapter = new OpenAIChatAdapter({ baseUrl, model: 'm', apiKey: 'sk-secret' })
    const error = await adapter.next({ messages: [], tools: [] }).catch((e: Error) => e)
    expect(error).toBeInstanceOf(Error)
    expect((error as Error).message).toBe('model request failed: HTTP 401 Unauthorized: {"error":{"message":"invalid api key"}}')
    expect((error as Error).message).not.toContain('sk-secret')
  })

  it('long error bodies are cut', async () => {
    const { baseUrl } = await serve([() => ({ status: 500, body: 'x'.repeat(2000) })])
    const error = await new OpenAIChatAdapter({ baseUrl, model: 'm' }).next({ messages: [], tools: [] }).catch((e: Error) => e)
    expect((error as Error).message).toBe(`model request failed: HTTP 500 Internal Server Error: ${'x'.repeat(500)}…`)
    // Front ends re-word it from these facts, never from the text.
    expect(error).toMatchObject({ code: AGENT_ERROR.model })
    expect(modelFailureFacts(error)).toEqual({ detail: `HTTP 500 Internal Server Error: ${'x'.repeat(500)}…` })
  })

  it('replies that are not JSON or have no message are errors', async () => {
    const { baseUrl } = await serve([() => ({ body: 'not json' }), () => ({ body: { choices: [] } })])
    const adapter = new OpenAIChatAdapter({ baseUrl, model: 'm' })
    await expect(adapter.next({ messages: [], tools: [] })).rejects.toThrow('model reply is not JSON: not json')
    await expect(adapter.next({ messages: [], tools: [] })).rejects.toThrow('model reply has no choices[0].message: {"choices":[]}')
  })

  it('a refused connection is an Error naming the URL', async () => {
    const { baseUrl } = await serve([])
    server!.close()
    await once(server!, 'close')
    server = undefined
    await expect(new OpenAIChatAdapter({ baseUrl, model: 'm' }).next({ messages: [], tools: [] })).rejects.toThrow(
      `model request to ${baseUrl}/chat/completions failed:`,
    )
    const error = await new OpenAIChatAdapter({ baseUrl, model: 'm' }).next({ messages: [], tools: [] }).catch((e: Error) => e)
    expect(modelFailureFacts(error)).toEqual({ url: `${baseUrl}/chat/completions` })
    expect(modelFailureFacts(new Error('model request failed: HTTP 500'))).toEqual({})
  })

  it('a server that never answers hits the timeout', async () => {
    const { baseUrl, received } = await serve([])
    server!.removeAllListeners('request')
    server!.on('request', (req: IncomingMessage) => {
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: undefined })
    })
    // 300 ms, not less: on a loaded 2-core machine a 50 ms timer fired before the request reached
    // the server (seen at load 16), and the test is about the timeout, not about speed.
    await expect(new OpenAIChatAdapter({ baseUrl, model: 'm', timeoutMs: 300 }).next({ messages: [], tools: [] })).rejects.toThrow(
      'model request timed out after 300ms',
    )
    expect(received).toHaveLength(1)
  })

  it('an aborted signal aborts the request', async () => {
    const { baseUrl, received } = await serve([() => ({ body: completion({ content: 'late' }) })])
    const controller = new AbortController()
    controller.abort()
    await expect(new OpenAIChatAdapter({ baseUrl, model: 'm' }).next({ messages: [], tools: [] }, controller.signal)).rejects.toThrow(
      'model request was aborted',
    )
    expect(received).toEqual([])
  })

  it('validates its options', () => {
    expect(() => new OpenAIChatAdapter({ baseUrl: 'not a url', model: 'm' })).toThrow('invalid model base URL "not a url"')
    expect(() => new OpenAIChatAdapter({ baseUrl: 'ftp://host', model: 'm' })).toThrow('expected http or https')
    expect(() => new OpenAIChatAdapter({ baseUrl: 'http://host', model: '' })).toThrow('OpenAIChatAdapter needs a model name')
    expect(() => new OpenAIChatAdapter({ baseUrl: 'http://host', model: 'm', timeoutMs: -1 })).toThrow('invalid timeoutMs -1')
    expect(new OpenAIChatAdapter({ baseUrl: 'http://host/v1///', model: 'm' }).url).toBe('http://host/v1/chat/completions')
  })
})

describe('fromEnv', () => {
  it('reads DSH_* first, then OPENAI_*, and defaults the base URL', () => {
    expect(openAIOptionsFromEnv({ OPENAI_MODEL: 'gpt', OPENAI_API_KEY: 'k1' })).toEqual({
      baseUrl: 'https://api.openai.com/v1',
      model: 'gpt',
      apiKey: 'k1',
    })
    expect(
      openAIOptionsFromEnv({
        OPENAI_BASE_URL: 'http://openai.local/v1',
        DSH_MODEL_BASE_URL: 'http://dsh.local/v1',
        OPENAI_MODEL: 'gpt',
        DSH_MODEL: 'deepseek-chat',
        OPENAI_API_KEY: 'k1',
        DSH_MODEL_API_KEY: 'k2',
      }),
    ).toEqual({ baseUrl: 'http://dsh.local/v1', model: 'deepseek-chat', apiKey: 'k2' })
    expect(openAIOptionsFromEnv({ DSH_MODEL: ' ', OPENAI_MODEL: 'gpt' }).model).toBe('gpt')
    expect(openAIOptionsFromEnv({ DSH_MODEL: 'env' }, { model: 'flag', timeoutMs: 5 })).toEqual({
      baseUrl: 'https://api.openai.com/v1',
      model: 'flag',
      timeoutMs: 5,
    })
  })

  it('requires a model', () => {
    expect(() => openAIOptionsFromEnv({})).toThrow('no model configured: set DSH_MODEL or OPENAI_MODEL')
    expect(() => OpenAIChatAdapter.fromEnv({ OPENAI_BASE_URL: 'http://x' })).toThrow('no model configured')
  })

  it('builds an adapter', () => {
    const adapter = OpenAIChatAdapter.fromEnv({ DSH_MODEL_BASE_URL: 'http://127.0.0.1:9/v1', DSH_MODEL: 'm' })
    expect(adapter.url).toBe('http://127.0.0.1:9/v1/chat/completions')
    expect(adapter.model).toBe('m')
    expect(adapter.timeoutMs).toBe(120_000)
  })
})
