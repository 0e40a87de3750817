import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..')
const SCOPE = '@deepseek-ai/'

/** Every workspace package's name (without the scope) → its workspace dependencies (without the scope), sorted. */
function workspaceGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>()
  for (const dir of readdirSync(join(ROOT, 'packages'))) {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'packages', dir, 'package.json'), 'utf8')) as {
      name: string
      dependencies?: Record<string, string>
      devDependencies?: Record<string, string>
    }
    // The CLI bundles the workspace packages it uses (bundle.mjs): they are its devDependencies.
    const bundled = pkg.name === `${SCOPE}dsh-bash-cli` ? pkg.devDependencies : {}
    const deps = Object.keys({ ...pkg.dependencies, ...bundled }).filter((name) => name.startsWith(SCOPE))
    graph.set(pkg.name.slice(SCOPE.length), deps.map((name) => name.slice(SCOPE.length)).sort())
  }
  return graph
}

/**
 * The graph of docs/architecture.md's "Package dependencies" block: `name → a, b`, `name (none)` or
 * `name → every package above except x`, two columns a line; dependencies outside the workspace left out.
 */
function documentedGraph(): { graph: Map<string, string[]>; everyOther: string[] } {
  const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8')
  const section = doc.slice(doc.indexOf('### Package dependencies'))
  const block = section.slice(section.indexOf('```') + 3, section.indexOf('```', section.indexOf('```') + 3))
  const graph = new Map<string, string[]>()
  const everyOther: Array<{ name: string; except: string[] }> = []
  for (const match of block.matchAll(/(dsh-[a-z-]+)\s+(?:\(none\)|→ every package above(?: except ((?:dsh-[a-z-]+(?:, )?)+))?|→ ((?:[@\w/.-]+(?:, )?)+))/g)) {
    const [whole, name, except, list] = match
    if (whole.includes('every package above')) everyOther.push({ name, except: except ? except.split(', ') : [] })
    else graph.set(name, (list ?? '').split(', ').filter((dep) => dep.startsWith('dsh-')).sort())
  }
  return { graph, everyOther }
}

describe('docs/architecture.md', () => {
  it("the package dependency graph is the packages' own (package.json dependencies)", () => {
    const real = workspaceGraph()
    const { graph, everyOther } = documentedGraph()
    for (const { name, except } of everyOther) graph.set(name, [...real.keys()].filter((other) => other !== name && !except.includes(other)).sort())
    expect(Object.fromEntries([...graph].sort())).toEqual(Object.fromEntries([...real].sort()))
  })
})

describe('declared dependencies', () => {
  it("every workspace package a package's tests import is one of its dependencies or devDependencies", () => {
    const undeclared: string[] = []
    for (const dir of readdirSync(join(ROOT, 'packages'))) {
      const pkg = JSON.parse(readFileSync(join(ROOT, 'packages', dir, 'package.json'), 'utf8')) as {
        name: string
        dependencies?: Record<string, string>
        devDependencies?: Record<string, string>
      }
      const declared = new Set([pkg.name, ...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.devDependencies ?? {})])
      const testDir = join(ROOT, 'packages', dir, 'test')
      let names: string[]
      try {
        names = readdirSync(testDir).filter((name) => name.endsWith('.ts'))
      } catch {
        continue
      }
      for (const name of names) {
        const text = readFileSync(join(testDir, name), 'utf8')
        // The package part of an import of @deepseek-ai/x or of a subpath of it.
        for (const match of text.matchAll(/from '(@deepseek-ai\/[a-z-]+)(?:\/[^']*)?'/g)) {
          if (!declared.has(match[1])) undeclared.push(`packages/${dir}/test/${name} imports ${match[1]}`)
        }
      }
    }
    // Hoisting makes an undeclared one work here, not in a package installed on its own.
    expect([...new Set(undeclared)]).toEqual([])
  })
})

/** Every .ts file under packages/*\/src, the conformance suite (test code) left out. */
function sourceFiles(): string[] {
  const files: string[] = []
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name)
      if (statSync(path).isDirectory()) {
        if (name !== 'conformance') walk(path)
      } else if (name.endsWith('.ts')) files.push(path)
    }
  }
  for (const pkg of readdirSync(join(ROOT, 'packages'))) walk(join(ROOT, 'packages', pkg, 'src'))
  return files
}

describe('house rules in packages/*/src', () => {
  const lines = sourceFiles().flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .map((text, i) => ({ where: `${file.slice(ROOT.length + 1)}:${i + 1}`, text })),
  )

  it('no error is classified by its message text', () => {
    const byText = /\.message\.(includes|startsWith|endsWith|match)\(|\.test\([^)]*\.message\)|\bmessage\s*===?\s*['"`](?!string['"`])/
    expect(lines.filter((line) => byText.test(line.text)).map((line) => line.where)).toEqual([])
  })

  it('nothing logs with console.*: plugins log through ctx.logger (the CLI only redirects console.log)', () => {
    const logs = /\bconsole\.(log|info|debug|warn|error)\(/
    const redirect = /console\.log = /
    expect(lines.filter((line) => logs.test(line.text) && !redirect.test(line.text)).map((line) => line.where)).toEqual([])
  })
})
