/**
 * Sizes as people write them (`512M`, `4G`, `1.5GiB`, `65536`) and as results show them (`4GiB`).
 * Every unit is binary, as in Docker's `--memory` and `ulimit`: K = KiB = 1024 bytes; `B` or no
 * unit means bytes.
 */

const UNITS: Record<string, number> = { '': 1, b: 1, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40 }

/**
 * Parses a size into bytes (a whole number, rounded down). Returns undefined for anything else: a
 * negative, fractional-byte, non-finite or unit-less garbage value. Callers word the error (they
 * know the flag or key).
 */
export function parseSize(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? value : undefined
  if (typeof value !== 'string') return undefined
  const match = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$/i.exec(value) ?? /^\s*(\d+)\s*(b)\s*$/i.exec(value)
  if (!match) return undefined
  const bytes = Math.floor(Number(match[1]) * UNITS[match[2].toLowerCase()])
  return Number.isSafeInteger(bytes) ? bytes : undefined
}

/** The size in the largest binary unit that keeps it short and exact to a tenth: `4GiB`, `1.5GiB`, `512MiB`, `100B`. */
export function formatSize(bytes: number): string {
  for (const [unit, size] of [['TiB', 2 ** 40], ['GiB', 2 ** 30], ['MiB', 2 ** 20], ['KiB', 2 ** 10]] as const) {
    if (bytes < size) continue
    const tenths = (bytes * 10) / size
    if (Number.isInteger(tenths)) return `${tenths / 10}${unit}`
  }
  return `${bytes}B`
}
