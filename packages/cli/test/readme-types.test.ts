/**
 * Every ```ts block of the repository's Markdown compiles against the packages as built: run
 * examples (readme-examples.test.ts) and the ones marked `type-checked in CI` alike, in one `tsc`
 * program (the build's TypeScript, the repository's compiler options). A block with neither marker
 * fails: an example nobody checks drifts from the API. See readme-blocks.ts for the markers.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from './helpers.js'
import { type TsBlock, tsBlocks } from './readme-blocks.js'

const TSC = join(ROOT, 'node_modules/.bin/tsc')

/**
 * Type-checks the blocks; returns tsc's errors as `<markdown file>:<line>: <message>` (a line of the
 * block's `given:` is reported as line 0 of it). Each block is its own module; its `given` is line 1.
 */
function typeErrors(blocks: Pick<TsBlock, 'file' | 'line' | 'given' | 'code'>[]): string[] {
  // Inside the repository, so that the packages and cordis resolve as they do for a user.
  const dir = mkdtempSync(join(ROOT, '.readme-types-'))
  try {
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        extends: '../tsconfig.base.json',
        compilerOptions: { noEmit: true, composite: false, declaration: false, declarationMap: false, sourceMap: false, incremental: false },
        include: ['*.ts'],
      }),
    )
    blocks.forEach((block, index) => writeFileSync(join(dir, `block-${index}.ts`), `${block.given}\n${block.code}\nexport {}\n`))
    const tsc = spawnSync(TSC, ['-p', dir, '--pretty', 'false'], { encoding: 'utf8' })
    const output = `${tsc.stdout}${tsc.stderr}`.trim()
    if (tsc.status === 0 && output === '') return []
    const errors = output.split('\n').map((line) => {
      const at = /block-(\d+)\.ts\((\d+),\d+\): (.*)$/.exec(line)
      if (!at) return line
      const block = blocks[Number(at[1])]!
      const inBlock = Number(at[2]) - 1
      return `${block.file}:${inBlock === 0 ? `${block.line - 1} (given)` : block.line + inBlock - 1}: ${at[3]}`
    })
    return errors.length > 0 ? errors : [`tsc exited ${tsc.status}`]
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

describe('README examples compile', () => {
  const blocks = tsBlocks()

  it('every ```ts block is either run or type-checked in CI', () => {
    expect(blocks.length).toBeGreaterThan(10)
    expect(blocks.filter((block) => !block.marker).map((block) => `${block.file}:${block.line}`)).toEqual([])
  })

  it('every ```ts block type-checks against the built packages', { timeout: 120_000 }, () => {
    expect(typeErrors(blocks)).toEqual([])
  })

  it('control: a wrong call and a missing given are reported at their Markdown lines', { timeout: 120_000 }, () => {
    const errors = typeErrors([
      { file: 'X.md', line: 10, given: '', code: "import { LocalExecutor } from '@deepseek-ai/dsh-bash-local'\nnew LocalExecutor(42)" },
      { file: 'Y.md', line: 20, given: 'declare const n: number', code: 'n.toUpperCase()\nctx.bash' },
    ])
    expect(errors).toEqual([
      expect.stringMatching(/^X\.md:11: error TS\d+: Expected 1-2 arguments, but got 1\.|^X\.md:11: error TS\d+: .*number/),
      expect.stringMatching(/^Y\.md:20: error TS\d+: Property 'toUpperCase' does not exist on type 'number'/),
      expect.stringMatching(/^Y\.md:21: error TS\d+: Cannot find name 'ctx'/),
    ])
  })
})
