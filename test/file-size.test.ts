/**
 * The kit stays in small files (one job each): no source file of bash-kit over 400 lines. A file
 * that grows past it is split by what it holds, never by moving lines to an unnamed "utils".
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const KIT = resolve(import.meta.dirname, '..', 'packages', 'bash-kit', 'src')
const MAX_LINES = 400

describe('bash-kit file sizes', () => {
  it(`no source file over ${MAX_LINES} lines`, () => {
    const sizes = readdirSync(KIT)
      .filter((name) => name.endsWith('.ts'))
      .map((name) => ({ name, lines: readFileSync(join(KIT, name), 'utf8').split('\n').length - 1 }))
    expect(sizes.length).toBeGreaterThan(10)
    expect(sizes.filter((file) => file.lines > MAX_LINES)).toEqual([])
  })
})
