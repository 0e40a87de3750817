/** Small statistics helpers: everything the bench reports is a median, a percentile or a ratio. */

export function quantile(values, q) {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b)
  if (sorted.length === 0) return NaN
  // Nearest-rank on the sorted sample (no interpolation: the value was really observed).
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))
  return sorted[rank]
}

export const median = (values) => quantile(values, 0.5)
export const p90 = (values) => quantile(values, 0.9)
export const p99 = (values) => quantile(values, 0.99)

export function summary(values) {
  return {
    n: values.length,
    median: round(median(values)),
    p90: round(p90(values)),
    min: round(Math.min(...values)),
    max: round(Math.max(...values)),
  }
}

/** Rounds to 3 significant decimals for display and JSON. */
export function round(value, digits = 3) {
  if (!Number.isFinite(value)) return value
  const f = 10 ** digits
  return Math.round(value * f) / f
}

export const MiB = 1024 * 1024

export function fmtMs(ms) {
  if (!Number.isFinite(ms)) return String(ms)
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`
  if (ms >= 10) return `${ms.toFixed(1)} ms`
  return `${ms.toFixed(2)} ms`
}

export function fmtBytes(bytes) {
  if (!Number.isFinite(bytes)) return String(bytes)
  if (Math.abs(bytes) >= MiB) return `${(bytes / MiB).toFixed(1)} MiB`
  if (Math.abs(bytes) >= 1024) return `${(bytes / 1024).toFixed(1)} KiB`
  return `${bytes} B`
}

/** Rotates an array by `n` places: used to interleave the order of the variants in each round. */
export function rotate(items, n) {
  const k = ((n % items.length) + items.length) % items.length
  return [...items.slice(k), ...items.slice(0, k)]
}
