import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { importCircles, importGraph } from './import-graph.js'

const ROOT = resolve(import.meta.dirname, '..')

describe('import circles', () => {
  it('no package imports itself back through others, and no source file through other files', () => {
    const graph = importGraph(ROOT)
    // Guards against a graph that silently saw nothing (a moved folder, a broken parser).
    expect(graph.edges.size).toBeGreaterThan(100)
    expect(importCircles(graph)).toEqual([])
  })

  describe('the check itself (controls: it can fail)', () => {
    let dir: string | undefined
    afterEach(() => {
      if (dir) rmSync(dir, { recursive: true, force: true })
      dir = undefined
    })
    /** A throwaway repository: { 'packages/a/src/x.ts': '…' }; every package gets a package.json. */
    const repo = (files: Record<string, string>) => {
      dir = mkdtempSync(join(tmpdir(), 'dsh-import-circles-'))
      for (const [path, text] of Object.entries(files)) {
        mkdirSync(dirname(join(dir, path)), { recursive: true })
        writeFileSync(join(dir, path), text)
      }
      for (const pkg of new Set(Object.keys(files).map((path) => path.split('/')[1]!))) {
        writeFileSync(join(dir, 'packages', pkg, 'package.json'), JSON.stringify({ name: `@deepseek-ai/dsh-${pkg}` }))
      }
      return dir
    }

    it('finds a circle of type-only imports across three files, written over several lines', () => {
      const root = repo({
        'packages/a/src/one.ts': "import type {\n  Two,\n} from './two.js'\nexport type One = Two[]\n",
        'packages/a/src/two.ts': "export { three } from './deeper/three.js'\nexport type Two = string\n",
        'packages/a/src/deeper/three.ts': "import type { One } from '../one.js'\nexport const three = (x: One) => x\n",
        'packages/a/src/leaf.ts': "import { three } from './deeper/three.js'\nexport const leaf = three\n",
      })
      expect(importCircles(importGraph(root))).toEqual([
        'packages/a/src/deeper/three.ts → packages/a/src/one.ts → packages/a/src/two.ts → packages/a/src/deeper/three.ts',
      ])
    })

    it('finds a dynamic import closing a circle, an index.ts folder import, and a circle of packages', () => {
      const root = repo({
        'packages/a/src/index.ts': "import { b } from '@deepseek-ai/dsh-b/sub'\nexport const a = () => import('./lazy/index.js')\n",
        'packages/a/src/lazy/index.ts': "export const lazy = async () => (await import('../index.js')).a\n",
        'packages/b/src/index.ts': "import { a } from '@deepseek-ai/dsh-a'\nexport const b = a\n",
      })
      expect(importCircles(importGraph(root))).toEqual([
        'packages/a/src/index.ts → packages/a/src/lazy/index.ts → packages/a/src/index.ts',
        'pkg:@deepseek-ai/dsh-a → pkg:@deepseek-ai/dsh-b → pkg:@deepseek-ai/dsh-a',
      ])
    })

    it('a chain without a way back is no circle', () => {
      const root = repo({
        'packages/a/src/one.ts': "import { two } from './two.js'\nexport const one = two\n",
        'packages/a/src/two.ts': "import { readFileSync } from 'node:fs'\nexport const two = readFileSync\n",
      })
      expect(importCircles(importGraph(root))).toEqual([])
    })
  })
})
