import { spawnSync } from 'node:child_process'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { recordLogs } from '../src/index.js'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..')

/** Runs an ES module in a separate node (reggol's targets are process-wide; stdout must be a pipe we read). */
function runModule(body: string): { stdout: string; stderr: string } {
  const script = `import { Context } from 'cordis'\nimport { routeLogs } from '@deepseek-ai/dsh-bash'\n${body}`
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' })
  return { stdout: result.stdout, stderr: result.stderr }
}

describe('logs through cordis', () => {
  it("cordis' default target prints to stdout; routeLogs moves it to stderr, uncolored on a pipe", () => {
    const result = runModule(`
      const ctx = new Context()
      ctx.logger('dsh-before').info('on stdout')
      routeLogs()
      routeLogs()
      ctx.logger('dsh-test').warn('a warning: %s', 'details')
      process.stdout.write('{"jsonrpc":"2.0"}\\n')
    `)
    expect(result).toEqual({ stdout: '[I] dsh-before on stdout\n{"jsonrpc":"2.0"}\n', stderr: '[W] dsh-test a warning: details\n' })
  })

  it('recordLogs sees every level under the logger name until stopped', () => {
    const ctx = new Context()
    const logs = recordLogs()
    ctx.logger('dsh-test').debug('d')
    ctx.logger('dsh-test').extend('part').error('e')
    logs.stop()
    ctx.logger('dsh-test').error('after')
    expect(logs.lines).toEqual([
      { name: 'dsh-test', type: 'debug', content: 'd' },
      { name: 'dsh-test:part', type: 'error', content: 'e' },
    ])
  })
})
