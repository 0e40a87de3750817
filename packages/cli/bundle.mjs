#!/usr/bin/env node
/**
 * Builds the published form of the CLI: one package that installs alone.
 *
 * - `dist/main.js` (+ its chunks beside it): the CLI (tsc's output in `lib/`) with every workspace package
 *   it reaches bundled in, split at each `import()` so a command loads only what it uses. Every
 *   other bare import stays external and must be one of this package's `dependencies`, at the
 *   version the library that imports it pins (checked here: a mismatch fails the build).
 * - Programs a workspace package runs as a process of its own (its package.json `dshBundle.programs`,
 *   e.g. bash-local's `dist/launcher-helper.js`) are bundled as entries at the same path.
 * - Assets: every entry of a bundled package's `files` other than `dist`, README.md and LICENSE
 *   (scripts, native binaries, …) is copied to `assets/<package directory>/` here, and the bundled
 *   code of that package finds it there: its `new URL('../scripts/x', import.meta.url)` (any `../`
 *   other than `../dist/`) is rewritten to `../assets/<package directory>/scripts/x`, which from
 *   `dist/` is the copy. So two packages may ship the same file name (bash-local's and bash-agent's
 *   `scripts/build-native.sh`), and a new package's assets need no change here.
 *
 * Run by the root `build` and `prepare` after `tsc -b`; `node packages/cli/bundle.mjs`.
 */
import { chmodSync, cpSync, existsSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { basename, dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { rolldown } from 'rolldown'

const HERE = dirname(fileURLToPath(import.meta.url))
const ROOT = join(HERE, '../..')
const SCOPE = '@deepseek-ai/'
const NOT_ASSETS = new Set(['dist', 'README.md', 'LICENSE'])
const ASSETS = join(HERE, 'assets')

const readJson = (path) => JSON.parse(readFileSync(path, 'utf8'))
const self = readJson(join(HERE, 'package.json'))

/** The workspace packages by name: { dir, pkg }. */
const workspace = new Map(
  readdirSync(join(ROOT, 'packages'))
    .map((name) => join(ROOT, 'packages', name))
    .filter((dir) => existsSync(join(dir, 'package.json')))
    .map((dir) => [readJson(join(dir, 'package.json')).name, { dir, pkg: readJson(join(dir, 'package.json')) }]),
)

function fail(message) {
  console.error(`bundle: ${message}`)
  process.exit(1)
}

/** `@scope/name/sub` → `@scope/name`; `name/sub` → `name`. */
const packageOf = (specifier) => specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/')
const isBuiltin = (specifier) => specifier.startsWith('node:') || builtinModules.includes(packageOf(specifier))

/** The workspace package holding a file, if any. */
function ownerOf(file) {
  for (const [name, { dir }] of workspace) if (!relative(dir, file).startsWith('..')) return name
  return undefined
}

const bundled = new Set()
/** Third-party package → the packages that import it (to check the pinned versions). */
const externals = new Map()

const input = { main: join(HERE, 'lib/main.js') }
for (const [name, { dir, pkg }] of workspace) {
  for (const program of pkg.dshBundle?.programs ?? []) {
    if (!program.startsWith('dist/') || !program.endsWith('.js')) fail(`${name}: dshBundle.programs entries are dist/*.js files, got ${program}`)
    input[program.slice('dist/'.length, -'.js'.length)] = join(dir, program)
  }
}

const build = await rolldown({
  input,
  platform: 'node',
  logLevel: 'warn',
  external: (specifier, importer) => {
    if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('\0')) return false
    if (isBuiltin(specifier)) return true
    if (specifier.startsWith(SCOPE)) return false
    const owner = (importer && ownerOf(importer)) ?? self.name
    const name = packageOf(specifier)
    if (!externals.has(name)) externals.set(name, new Set())
    externals.get(name).add(owner)
    return true
  },
  plugins: [
    {
      name: 'workspace-assets',
      transform(code, id) {
        const owner = ownerOf(id)
        if (!owner || owner === self.name) return null
        bundled.add(owner)
        // `new URL('../scripts/x', import.meta.url)` → the package's copy under assets/ (see the top).
        const short = basename(workspace.get(owner).dir)
        const rewritten = code.replace(/new URL\((['"`])\.\.\/(?!dist\/)/g, (_, quote) => `new URL(${quote}../assets/${short}/`)
        return rewritten === code ? null : { code: rewritten, map: null }
      },
    },
  ],
})
rmSync(join(HERE, 'dist'), { recursive: true, force: true })
await build.write({ dir: join(HERE, 'dist'), format: 'esm', entryFileNames: '[name].js', chunkFileNames: '[name]-[hash].js', sourcemap: false })
await build.close()
// Programs of the bundle that are started directly keep their executable bit.
for (const name of Object.keys(input)) chmodSync(join(HERE, 'dist', `${name}.js`), 0o755)

// Every external import is a dependency of this package at the version its importer pins.
const problems = []
for (const [name, importers] of externals) {
  const mine = self.dependencies?.[name]
  if (!mine) {
    problems.push(`${name} (imported by ${[...importers].join(', ')}) is missing from packages/cli/package.json dependencies`)
    continue
  }
  for (const importer of importers) {
    const pinned = workspace.get(importer)?.pkg.dependencies?.[name] ?? workspace.get(importer)?.pkg.peerDependencies?.[name]
    if (pinned && pinned !== mine) problems.push(`${name}: ${importer} pins ${pinned}, packages/cli/package.json has ${mine}`)
  }
}
for (const name of Object.keys(self.dependencies ?? {})) {
  if (name.startsWith(SCOPE)) problems.push(`${name} is bundled: list it under devDependencies, not dependencies`)
}
if (problems.length > 0) fail(problems.join('\n'))

// Assets of the bundled packages, each package's under assets/<its directory>/ (see the top).
rmSync(ASSETS, { recursive: true, force: true })
for (const name of [...bundled].sort()) {
  const { dir, pkg } = workspace.get(name)
  for (const entry of pkg.files ?? []) {
    if (entry.startsWith('!') || NOT_ASSETS.has(entry) || !existsSync(join(dir, entry))) continue
    cpSync(join(dir, entry), join(ASSETS, basename(dir), entry), { recursive: true, preserveTimestamps: true })
  }
}
