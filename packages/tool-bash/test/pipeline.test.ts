import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createApp, type App } from './harness.js'

/** The bash tool under the pipeline's middleware and post-execute stages, with a real executor. */
describe('bash through the pipeline stages', () => {
  let app: App | undefined
  afterEach(async () => {
    await app?.dispose()
    app = undefined
  })

  it('a deadline middleware that hands the tool a replacement signal cancels the command', async () => {
    app = await createApp()
    const outer = new AbortController()
    // 3 s: long enough for a fresh executor's first command to print 'before' under load (CI), far short of its sleep.
    app.root.tools.useMiddleware((call, next) => next({ signal: AbortSignal.any([call.signal ?? outer.signal, AbortSignal.timeout(3000)]) }))
    const marker = join(app.workspace, 'finished')
    const result = await app.call('bash', { command: `echo before; sleep 30; touch ${marker}`, description: 'sleep past the deadline' }, undefined, outer.signal)
    expect(result.isError).toBe(true)
    expect(result.content[0].text).toBe('Error: the command was aborted\nbefore\n[killed by signal: SIGTERM]')
    expect(outer.signal.aborted).toBe(false)
    expect(existsSync(marker)).toBe(false)
  })

  it('a post-execute listener replaces a result and another appends context after it', async () => {
    app = await createApp()
    app.root.tools.onPostExecute((call, result) =>
      call.name === 'bash' && result.content[0].text.includes('token=')
        ? { kind: 'replace', result: result.content[0].text.replace(/token=\S+/g, 'token=[redacted]') }
        : undefined,
    )
    app.root.tools.onPostExecute((call) => (call.name === 'bash' ? { kind: 'append', text: 'context: the workspace is a scratch directory' } : undefined), { order: 1 })
    const result = await app.call('bash', { command: 'echo token=abc123; echo done', description: 'print a token' })
    expect(result).toEqual({
      content: [
        { type: 'text', text: 'token=[redacted]\ndone\n' },
        { type: 'text', text: 'context: the workspace is a scratch directory' },
      ],
      isError: false,
      // A redaction is new text for the same run: the run's facts stay.
      structured: expect.objectContaining({ status: 'completed', exitCode: 0, truncated: false }),
    })
  })
})
