import { readFileSync } from 'node:fs'
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Document } from 'yaml'
import { z } from 'zod'
import { POLICY_ERROR, PolicyError } from './errors.js'
import type { Policy } from './types.js'

export { PolicyError }

export const POLICY_DEFAULTS = { default: 'ask', maxCommands: 50, maxCommandBytes: 16384 } as const

const KEYS = ['default', 'deny', 'ask', 'allow', 'interactive', 'maxCommands', 'maxCommandBytes', 'description'] as const

const patterns = z.array(z.string().refine((text) => text.trim().length > 0))
const limit = z.number().int().positive()

export const policySchema = z.strictObject({
  default: z.enum(['allow', 'ask', 'deny']).default(POLICY_DEFAULTS.default),
  deny: patterns.default([]),
  ask: patterns.default([]),
  allow: patterns.default([]),
  /** Allowed commands that may also run as interactive tasks without asking (absent in older files: none). */
  interactive: patterns.default([]),
  maxCommands: limit.default(POLICY_DEFAULTS.maxCommands),
  maxCommandBytes: limit.default(POLICY_DEFAULTS.maxCommandBytes),
  /** Free text for people reading the file. */
  description: z.string().optional(),
})

/** What a policy file or a config object may hold; everything but the rules has a default. */
export type PolicyInput = z.input<typeof policySchema>

/** Validates a policy given as an object (plugin configuration, tests). Throws `PolicyError`. */
export function definePolicy(input: unknown, file?: string): Policy {
  const parsed = policySchema.safeParse(input)
  if (!parsed.success) throw new PolicyError(file, describeIssue(parsed.error.issues[0]))
  return freeze(parsed.data)
}

/**
 * Parses a policy file's text: JSON when the name ends in `.json` (or, without a known extension,
 * when the text starts with `{`), YAML otherwise. Throws `PolicyError` naming the line.
 */
export function parsePolicy(text: string, fileName = 'policy'): Policy {
  const json = /\.json$/i.test(fileName) || (!/\.ya?ml$/i.test(fileName) && text.trimStart().startsWith('{'))
  if (!text.trim()) throw new PolicyError(fileName, 'the policy file is empty', 1, 1)
  const lineCounter = new LineCounter()
  let data: unknown
  if (json) {
    const error = jsonSyntaxError(text)
    if (error) {
      const { line, col } = position(text, error.offset)
      throw new PolicyError(fileName, `invalid JSON: ${error.message}`, line, col)
    }
    data = JSON.parse(text)
  }
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true })
  const yamlError = doc.errors[0]
  if (yamlError) {
    const at = yamlError.linePos?.[0]
    const first = yamlError.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '')
    const message = first.charAt(0).toLowerCase() + first.slice(1)
    throw new PolicyError(fileName, `invalid ${json ? 'JSON' : 'YAML'}: ${message}`, at?.line, at?.col)
  }
  if (!json) data = doc.toJS()
  const parsed = policySchema.safeParse(data)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const key = issue.code === 'unrecognized_keys' ? issue.keys[0] : undefined
    const offset = locate(doc, issue.path, key)
    const at = offset === undefined ? undefined : lineCounter.linePos(offset)
    throw new PolicyError(fileName, describeIssue(issue), at?.line, at?.col)
  }
  return freeze(parsed.data)
}

/** Reads and parses a policy file. Every error message starts with the path (and line). */
export function loadPolicyFile(path: string): Policy {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new PolicyError(path, `cannot read the policy file: ${(error as Error).message}`, undefined, undefined, POLICY_ERROR.unreadable)
  }
  return parsePolicy(text, path)
}

function freeze(data: z.output<typeof policySchema>): Policy {
  return Object.freeze({
    default: data.default,
    deny: Object.freeze([...data.deny]),
    ask: Object.freeze([...data.ask]),
    allow: Object.freeze([...data.allow]),
    interactive: Object.freeze([...data.interactive]),
    maxCommands: data.maxCommands,
    maxCommandBytes: data.maxCommandBytes,
  })
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const key = issue.path[0]
  switch (key) {
    case undefined:
      if (issue.code === 'unrecognized_keys') return `unknown key "${issue.keys[0]}" (expected one of ${KEYS.join(', ')})`
      return 'the policy must be a mapping of "default", "deny", "ask" and "allow"'
    case 'default':
      return '"default" must be one of "allow", "ask", "deny"'
    case 'deny':
    case 'ask':
    case 'allow':
    case 'interactive':
      return issue.code === 'custom' ? `"${key}" has an empty pattern` : `"${key}" must be a list of strings`
    case 'maxCommands':
    case 'maxCommandBytes':
      return `"${key}" must be a positive integer`
    default:
      return `"${String(key)}" must be a string`
  }
}

/** The offset of the node at `path` (or of the unknown key), as far as it exists. */
function locate(doc: Document, path: readonly PropertyKey[], unknownKey?: string): number | undefined {
  let node: unknown = doc.contents
  let offset = rangeStart(node)
  for (const key of path) {
    if (isMap(node)) {
      const pair = node.items.find((item) => isScalar(item.key) && item.key.value === key)
      if (!pair) break
      node = pair.value
      offset = rangeStart(pair.value) ?? rangeStart(pair.key) ?? offset
    } else if (isSeq(node) && typeof key === 'number' && node.items[key]) {
      node = node.items[key]
      offset = rangeStart(node) ?? offset
    } else {
      break
    }
  }
  if (unknownKey !== undefined && isMap(node)) {
    const pair = node.items.find((item) => isScalar(item.key) && item.key.value === unknownKey)
    offset = rangeStart(pair?.key) ?? offset
  }
  return offset
}

function rangeStart(node: unknown): number | undefined {
  return (node as { range?: [number, number, number] } | null | undefined)?.range?.[0]
}

function position(text: string, offset: number): { line: number; col: number } {
  const before = text.slice(0, offset)
  const line = before.split('\n').length
  return { line, col: offset - before.lastIndexOf('\n') }
}

/**
 * `JSON.parse` does not always say where it failed (Node 20: `Unexpected token '}', … is not valid
 * JSON`), so a small strict reader finds the place.
 */
export function jsonSyntaxError(text: string): { offset: number; message: string } | undefined {
  let i = 0
  const fail = (message: string): never => {
    throw new JsonSyntax(i, message)
  }
  const blank = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i])) i++
  }
  const string = () => {
    i++
    while (i < text.length) {
      const ch = text[i]
      if (ch === '"') {
        i++
        return
      }
      if (ch === '\\') {
        const next = text[i + 1]
        if (next === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) fail('invalid \\u escape in a string')
          i += 6
          continue
        }
        if (!next || !'"\\/bfnrt'.includes(next)) fail('invalid escape in a string')
        i += 2
        continue
      }
      if (ch < ' ') fail('control character in a string')
      i++
    }
    fail('unterminated string')
  }
  const value = (): void => {
    blank()
    const ch = text[i]
    if (ch === undefined) fail('unexpected end of the file')
    if (ch === '{') {
      i++
      blank()
      if (text[i] === '}') {
        i++
        return
      }
      for (;;) {
        blank()
        if (text[i] !== '"') fail('expected a double-quoted property name')
        string()
        blank()
        if (text[i] !== ':') fail('expected ":" after a property name')
        i++
        value()
        blank()
        if (text[i] === ',') {
          i++
          continue
        }
        if (text[i] === '}') {
          i++
          return
        }
        fail(text[i] === undefined ? 'unexpected end of the file' : 'expected "," or "}" after a property value')
      }
    }
    if (ch === '[') {
      i++
      blank()
      if (text[i] === ']') {
        i++
        return
      }
      for (;;) {
        value()
        blank()
        if (text[i] === ',') {
          i++
          continue
        }
        if (text[i] === ']') {
          i++
          return
        }
        fail(text[i] === undefined ? 'unexpected end of the file' : 'expected "," or "]" after a list item')
      }
    }
    if (ch === '"') return string()
    const literal = /^(?:-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)/.exec(text.slice(i, i + 400))
    if (!literal) fail(`unexpected ${JSON.stringify(ch)}`)
    i += literal![0].length
  }
  try {
    value()
    blank()
    if (i < text.length) fail('unexpected text after the policy')
    return undefined
  } catch (error) {
    if (error instanceof JsonSyntax) return { offset: error.offset, message: error.message }
    if (error instanceof RangeError) return { offset: 0, message: 'nested too deeply' }
    throw error
  }
}

class JsonSyntax extends Error {
  constructor(
    readonly offset: number,
    message: string,
  ) {
    super(message)
  }
}
