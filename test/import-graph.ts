/**
 * The import graph of the workspace's sources, for the circle check (import-cycles.test.ts).
 *
 * Nodes are source files (`packages/<pkg>/src/**.ts`, relative to the repository) and packages
 * (`pkg:<name>`). A relative import is an edge file → file; an import of a workspace package
 * (`@deepseek-ai/dsh-…`, any subpath) is an edge from the importing file's package to that package.
 * Type-only imports count: a circle of types is a circle of meaning, and the ones this check was
 * written for were type-only. Dynamic `import()` counts too.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import ts from 'typescript'

export interface ImportGraph {
  /** node → the nodes it imports (sorted, no duplicates). */
  edges: Map<string, string[]>
}

const SCOPE = '@deepseek-ai/'

function walk(dir: string): string[] {
  const out: string[] = []
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) out.push(...walk(path))
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(path)
  }
  return out
}

/** Workspace package name (from its package.json) → its folder, for every `packages/*` with a `src/`. */
export function workspacePackages(root: string): Map<string, string> {
  const packages = new Map<string, string>()
  for (const name of readdirSync(join(root, 'packages')).sort()) {
    const dir = join(root, 'packages', name)
    try {
      statSync(join(dir, 'src'))
    } catch {
      continue
    }
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string }
    packages.set(manifest.name, dir)
  }
  return packages
}

/** The graph of every package's `src/` under `root` (the repository, or a fixture shaped like it). */
export function importGraph(root: string): ImportGraph {
  const edges = new Map<string, Set<string>>()
  const add = (from: string, to: string) => {
    if (!edges.has(from)) edges.set(from, new Set())
    edges.get(from)!.add(to)
  }
  const packages = workspacePackages(root)
  for (const [pkg, dir] of packages) {
    for (const file of walk(join(dir, 'src'))) {
      const from = relative(root, file)
      if (!edges.has(from)) edges.set(from, new Set())
      const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true)
      for (const { fileName: spec } of info.importedFiles) {
        if (spec.startsWith('.')) {
          const target = resolveRelative(dirname(file), spec)
          if (target) add(from, relative(root, target))
        } else if (spec.startsWith(SCOPE)) {
          const name = spec.split('/').slice(0, 2).join('/')
          if (packages.has(name) && name !== pkg) add(`pkg:${pkg}`, `pkg:${name}`)
        }
      }
    }
  }
  return { edges: new Map([...edges].map(([node, to]) => [node, [...to].sort()])) }
}

/** `./x.js` → `x.ts`, `./x` → `x.ts` or `x/index.ts`; undefined for a non-source file (JSON, a script). */
function resolveRelative(dir: string, spec: string): string | undefined {
  const base = resolve(dir, spec.replace(/\.js$/, ''))
  for (const candidate of [`${base}.ts`, join(base, 'index.ts')]) {
    try {
      if (statSync(candidate).isFile()) return candidate
    } catch {
      // not this one
    }
  }
  return undefined
}

/**
 * Every circle of the graph, one per strongly connected component of more than one node (or a node
 * importing itself), written as a path that comes back to its start: `a → b → a`. Sorted.
 */
export function importCircles(graph: ImportGraph): string[] {
  // Tarjan's strongly connected components, iterative enough for a few hundred files.
  let index = 0
  const indices = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const components: string[][] = []
  const visit = (node: string) => {
    indices.set(node, index)
    low.set(node, index)
    index++
    stack.push(node)
    onStack.add(node)
    for (const next of graph.edges.get(node) ?? []) {
      if (!indices.has(next)) {
        visit(next)
        low.set(node, Math.min(low.get(node)!, low.get(next)!))
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, indices.get(next)!))
      }
    }
    if (low.get(node) === indices.get(node)) {
      const component: string[] = []
      let member: string
      do {
        member = stack.pop()!
        onStack.delete(member)
        component.push(member)
      } while (member !== node)
      const selfLoop = (graph.edges.get(node) ?? []).includes(node)
      if (component.length > 1 || selfLoop) components.push(component)
    }
  }
  for (const node of [...graph.edges.keys()].sort()) if (!indices.has(node)) visit(node)
  return components.map((component) => circleThrough(graph, component)).sort()
}

/** One concrete circle inside a component, starting at its smallest node: a readable report. */
function circleThrough(graph: ImportGraph, component: string[]): string {
  const members = new Set(component)
  const start = [...component].sort()[0]!
  // Breadth-first from start back to start, inside the component.
  const previous = new Map<string, string>()
  const queue = [start]
  while (queue.length > 0) {
    const node = queue.shift()!
    for (const next of graph.edges.get(node) ?? []) {
      if (!members.has(next)) continue
      if (next === start) {
        const path = [start]
        for (let at: string | undefined = node; at !== undefined && at !== start; at = previous.get(at)) path.splice(1, 0, at)
        return [...path, start].join(' → ')
      }
      if (!previous.has(next)) {
        previous.set(next, node)
        queue.push(next)
      }
    }
  }
  return `${start} → ${start}`
}
