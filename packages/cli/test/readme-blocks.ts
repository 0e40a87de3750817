/**
 * The TypeScript examples of the repository's Markdown (README.md, docs/, every package's README),
 * for the two tests that keep them true: readme-examples.test.ts runs the blocks marked
 * `<!-- runs in CI as written: … -->`, readme-types.test.ts type-checks every block (run or not)
 * and fails on a ```ts block with neither marker. A block marked
 * `<!-- type-checked in CI: packages/cli/test/readme-types.test.ts -->` is compiled but not run
 * (it needs a Docker engine, a cluster, an SSH host or a model); the marker may end with
 * `; given: <declarations>` for what a fragment takes from its surroundings (`ctx`, a class from
 * another example), which the reader sees in the prose around it.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from './helpers.js'

export const RUN_MARKER = '<!-- runs in CI as written: packages/cli/test/readme-examples.test.ts -->'
const TYPES_MARKER = /^<!-- type-checked in CI: packages\/cli\/test\/readme-types\.test\.ts(?:; given: (.*))? -->$/

export interface TsBlock {
  /** The Markdown file, relative to the repository. */
  file: string
  /** 1-based line of the block's first code line. */
  line: number
  /** The block's index among the run blocks of its file (readme-examples' `example <i>`), or undefined. */
  runIndex?: number
  marker: 'runs' | 'type-checked' | undefined
  /** Declarations the fragment assumes (from the marker's `given:`), '' when none. */
  given: string
  code: string
}

function markdown(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === 'node_modules' || entry.name.startsWith('.') || entry.name === 'dist' || entry.name === 'lib') return []
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return markdown(path)
    return entry.name.endsWith('.md') ? [path] : []
  })
}

/** Every ```ts block of the repository's Markdown, with the marker on the line before it. */
export function tsBlocks(): TsBlock[] {
  const found: TsBlock[] = []
  for (const file of ['README.md', ...markdown('docs'), ...markdown('packages')]) {
    const lines = readFileSync(join(ROOT, file), 'utf8').split('\n')
    let runs = 0
    for (let i = 0; i < lines.length; i++) {
      const text = lines[i]!.trim()
      if (text === RUN_MARKER || TYPES_MARKER.test(text)) {
        if (lines[i + 1]?.trim() !== '```ts') throw new Error(`${file}:${i + 1}: the marker must be followed by a \`\`\`ts block`)
      }
      if (text !== '```ts') continue
      const before = lines[i - 1]?.trim() ?? ''
      const end = lines.indexOf('```', i + 1)
      const marker = before === RUN_MARKER ? 'runs' : TYPES_MARKER.test(before) ? 'type-checked' : undefined
      found.push({
        file,
        line: i + 2,
        runIndex: marker === 'runs' ? runs++ : undefined,
        marker,
        given: TYPES_MARKER.exec(before)?.[1] ?? '',
        code: lines.slice(i + 1, end).join('\n'),
      })
    }
  }
  return found
}
