/**
 * Every package's entry file (src/index.ts) opens with its "flow at a glance": what the package does
 * and how a call goes through its files. The files a header names must exist, so that a renamed or
 * split file makes its header fail here instead of lying.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = resolve(import.meta.dirname, '..')
const PACKAGES = readdirSync(join(ROOT, 'packages')).filter((dir) => existsSync(join(ROOT, 'packages', dir, 'src', 'index.ts'))).sort()

/** The leading doc comment of a file, or '' when it does not start with one. */
function header(text: string): string {
  return text.startsWith('/**') ? text.slice(0, text.indexOf('*/') + 2) : ''
}

/** Source files a header names (`plugin.ts`, `conformance/`-less names), as paths under src/. */
function namedFiles(text: string): string[] {
  return [...new Set([...text.matchAll(/(?<![\w./-])([\w-]+(?:\/[\w-]+)*\.ts)\b/g)].map((match) => match[1]!))]
}

describe('entry file headers', () => {
  it.each(PACKAGES)('packages/%s/src/index.ts opens with its flow at a glance, naming files that exist', (dir) => {
    const text = header(readFileSync(join(ROOT, 'packages', dir, 'src', 'index.ts'), 'utf8'))
    expect(text).toMatch(/^\/\*\*\n \* @deepseek-ai\/[\w-]+ — /)
    expect(text).toContain('Flow at a glance:')
    const missing = namedFiles(text).filter((file) => !existsSync(join(ROOT, 'packages', dir, 'src', file)))
    expect(missing).toEqual([])
  })

  it('control: a header naming a file that is not there is caught', () => {
    expect(namedFiles('/** ... (launch.ts, gone.ts; native/launcher.c, docs/x.md) */')).toEqual(['launch.ts', 'gone.ts'])
    expect(header('export {}\n/** late */')).toBe('')
  })
})
