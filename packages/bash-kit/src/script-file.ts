import { readFileSync } from 'node:fs'

/**
 * Shell scripts kept as `.sh` files in a package's `scripts/` folder (beside `src/` and `dist/`,
 * listed in the package's `files`), so that they read as shell, are checked by `bash -n` in a test,
 * and are not string arrays in TypeScript. Read once, at module load:
 * `readScript(new URL('../scripts/x.sh', import.meta.url))` resolves the same from src and dist.
 */

/** A whole line that is only a comment: a note for the file's reader, not part of the script. */
const COMMENT_LINE = /^[ \t]*#/
/** `@NAME@`: a value filled in by `fillScript` (a variable name, a shared fragment, a list). */
const PLACEHOLDER = /@([A-Z][A-Z0-9_]*)@/g

/**
 * The script in `url`: its comment lines dropped (unless `keepComments`: the script itself shows
 * them, like the prelude's first line), without the file's final newline. Throws when the file
 * cannot be read: a package without its scripts is broken, and says so at load.
 */
export function readScript(url: URL, options: { keepComments?: boolean } = {}): string {
  const text = readFileSync(url, 'utf8').replace(/\n$/, '')
  if (options.keepComments) return text
  return text
    .split('\n')
    .filter((line) => !COMMENT_LINE.test(line))
    .join('\n')
}

/**
 * Fills the `@NAME@` placeholders of `script` from `values`. Every placeholder must have a value
 * and every value must be used: a renamed placeholder fails at once instead of shipping `@X@`.
 */
export function fillScript(script: string, values: Readonly<Record<string, string>>): string {
  const used = new Set<string>()
  const filled = script.replace(PLACEHOLDER, (whole, name: string) => {
    if (!Object.hasOwn(values, name)) throw new Error(`script placeholder @${name}@ has no value`)
    used.add(name)
    return values[name]
  })
  const unused = Object.keys(values).filter((name) => !used.has(name))
  if (unused.length > 0) throw new Error(`script values not used: ${unused.join(', ')}`)
  return filled
}
