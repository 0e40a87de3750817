import { toolErrors } from './errors.js'
/**
 * The first pipeline stage: tool arguments must survive a lossless JSON round trip, so that what
 * the pipeline checks is exactly what the tool runs with, and nothing can change under it later.
 * Returns a deep-frozen copy; throws an Error naming the first offending path.
 *
 * Object properties whose value is `undefined` are dropped (in JSON they simply do not exist);
 * everything else JSON cannot carry is refused: NaN and infinities, functions, symbols, bigints,
 * `undefined` inside arrays, cycles, and objects that are not plain (Date, Map, class instances).
 */
export function snapshotArguments(value: unknown): Readonly<Record<string, unknown>> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw toolErrors.invalidArguments(`expected a JSON object, got ${describe(value)}`)
  }
  return copy(value, 'arguments', new Set()) as Readonly<Record<string, unknown>>
}

function copy(value: unknown, path: string, stack: Set<object>): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value
    case 'number':
      if (!Number.isFinite(value)) throw toolErrors.invalidArguments(`${quote(path)} is not a finite number (${value})`)
      return value
    case 'object': {
      if (value === null) return null
      if (stack.has(value)) throw toolErrors.invalidArguments(`${quote(path)} is a circular reference`)
      stack.add(value)
      try {
        if (Array.isArray(value)) {
          const out: unknown[] = []
          for (let i = 0; i < value.length; i++) {
            if (value[i] === undefined) throw toolErrors.invalidArguments(`${quote(`${path}[${i}]`)} is undefined`)
            out.push(copy(value[i], `${path}[${i}]`, stack))
          }
          return Object.freeze(out)
        }
        const proto = Object.getPrototypeOf(value)
        if (proto !== Object.prototype && proto !== null) {
          throw toolErrors.invalidArguments(`${quote(path)} is not a plain JSON object (${proto?.constructor?.name ?? 'unknown'})`)
        }
        const out: Record<string, unknown> = {}
        for (const key of Object.keys(value)) {
          const item = (value as Record<string, unknown>)[key]
          if (item === undefined) continue
          const child = path === 'arguments' ? key : `${path}.${key}`
          // defineProperty, not assignment: a JSON key "__proto__" (which JSON.parse makes an own
          // property) must stay an own property, never become the copy's prototype.
          Object.defineProperty(out, key, { value: copy(item, child, stack), enumerable: true, writable: true, configurable: true })
        }
        return Object.freeze(out)
      } finally {
        stack.delete(value)
      }
    }
    default:
      throw toolErrors.invalidArguments(`${quote(path)} is not JSON (${typeof value})`)
  }
}

function quote(path: string): string {
  return `"${path}"`
}

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value
}
