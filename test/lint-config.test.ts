/**
 * The linter `npm test` runs (`npm run lint`, eslint.config.mjs) keeps the promise rules on, as
 * errors and with type information, for every package's sources and tests. The lint run itself is
 * the real check (0 errors or npm test stops); this pins what it checks, so that a config edit
 * cannot quietly switch a rule off or drop a folder.
 */
import { resolve } from 'node:path'
import { ESLint } from 'eslint'
import { describe, expect, it } from 'vitest'

const ROOT = resolve(import.meta.dirname, '..')
const RULES = ['@typescript-eslint/no-floating-promises', '@typescript-eslint/no-misused-promises']

describe('the linter in npm test', () => {
  const eslint = new ESLint({ cwd: ROOT })

  it.each(['packages/bash-kit/src/index.ts', 'packages/tool-bash/src/plugin.ts', 'packages/cli/test/repl.test.ts', 'test/exports.test.ts'])(
    '%s: the promise rules are errors, with type information',
    async (file) => {
      const config = (await eslint.calculateConfigForFile(resolve(ROOT, file))) as {
        rules: Record<string, unknown[]>
        languageOptions: { parserOptions: { project?: unknown } }
      }
      for (const rule of RULES) expect(config.rules[rule]?.[0], rule).toBe(2)
      expect(config.languageOptions.parserOptions.project).toEqual(['tsconfig.lint.json'])
    },
  )

  it('control: a built file is not linted (dist/ is ignored)', async () => {
    expect(await eslint.isPathIgnored(resolve(ROOT, 'packages/bash-kit/dist/index.js'))).toBe(true)
    expect(await eslint.isPathIgnored(resolve(ROOT, 'packages/bash-kit/src/index.ts'))).toBe(false)
  })
})
