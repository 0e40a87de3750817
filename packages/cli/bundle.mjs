#!/usr/bin/env node
/**
 * Builds the published form of the CLI: one package that installs alone.
 *
 * - `dist/main.js` (+ its chunks beside it: they find assets as it does): the CLI (tsc's output in `lib/`) with every workspace package
 *   it reaches bundled in, split at each `import()` so a command loads only what it uses. Every
 *   other bare import stays external and must be one of this package's `dependencies`, at the
 *   version the library that imports it pins (checked here: a mismatch fails the build).
 * - Programs a workspace package runs as a process of its own (its package.json `dshBundle.programs`,
 *   e.g. bash-local's `dist/launcher-helper.js`) are bundled as entries at the same path.
 * - Assets: every entry of a bundled package's `files` other than `dist`, README.md and LICENSE
 *   (scripts, native binaries, …) is copied into this package at the same relative path. The
 *   packages find them as `new URL('../scripts/x', import.meta.url)` from `dist/`, which resolves
 *   the same from here. Two packages shipping the same path with different bytes fail the build,
 *   and so does an asset directory missing from this package's `files` or one that would overwrite
 *   a file of this package. Only what the previous build copied (`lib/bundle-assets.json`) is removed.
 *
 * Run by the root `build` and `prepare` after `tsc -b`; `node packages/cli/bundle.mjs`.
 */
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { rolldown } from 'rolldown'

const HERE = dirname(fileURLToPath(import.meta.url))
const ROOT = join(HERE, '../..')
const SCOPE = '@deepseek-ai/'
const NOT_ASSETS = new Set(['dist', 'README.md', 'LICENSE'])

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
      name: 'record-workspace-packages',
      load(id) {
        const owner = ownerOf(id)
        if (owner && owner !== self.name) bundled.add(owner)
        return null
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

// Assets of the bundled packages, merged into this package at the same relative paths. What the
// last build copied (lib/bundle-assets.json) is removed first; nothing else here is ever touched.
const MANIFEST = join(HERE, 'lib/bundle-assets.json')
const previous = existsSync(MANIFEST) ? readJson(MANIFEST) : []
for (const path of previous) rmSync(join(HERE, path), { force: true })
const copied = new Map()
function copyAsset(from, to, owner) {
  if (statSync(from).isDirectory()) {
    for (const entry of readdirSync(from)) copyAsset(join(from, entry), join(to, entry), owner)
    return
  }
  const path = relative(HERE, to)
  const before = copied.get(path)
  if (before && !readFileSync(before.from).equals(readFileSync(from))) fail(`${path} is shipped by both ${before.owner} and ${owner} with different contents`)
  if (!before && existsSync(to)) fail(`${path} of ${owner} would overwrite packages/cli/${path}`)
  copied.set(path, { from, owner })
}
for (const name of [...bundled].sort()) {
  const { dir, pkg } = workspace.get(name)
  for (const entry of pkg.files ?? []) {
    if (entry.startsWith('!') || NOT_ASSETS.has(entry) || !existsSync(join(dir, entry))) continue
    if (!(self.files ?? []).includes(entry)) fail(`${name} ships ${entry}: add "${entry}" to the files of packages/cli/package.json`)
    copyAsset(join(dir, entry), join(HERE, entry), name)
  }
}
for (const [path, { from }] of copied) {
  mkdirSync(dirname(join(HERE, path)), { recursive: true })
  cpSync(from, join(HERE, path), { preserveTimestamps: true })
}
writeFileSync(MANIFEST, `${JSON.stringify([...copied.keys()].sort(), null, 2)}\n`)
