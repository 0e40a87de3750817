import type { z } from 'zod'

/**
 * Turns zod issues into the pipeline's stable messages:
 * `missing required property "command"`, `"command" must be a string`, … joined by `; `.
 * Pass the parsed `input` so that a missing property can be told from one of the wrong type.
 */
export function formatIssues(issues: readonly z.core.$ZodIssue[], input?: unknown): string {
  const hasInput = arguments.length > 1
  return issues.map((issue) => formatIssue(issue, hasInput, input)).join('; ')
}

/**
 * Whether the value at the issue's path is absent. zod 4 leaves `issue.input` out unless parsing
 * used `reportInput`, so the parsed input itself is consulted when it is given. Without either, the
 * issue reads as a wrong type (`"x" must be a string`): its message text is never consulted.
 */
function isMissing(issue: z.core.$ZodIssue, hasInput: boolean, input: unknown): boolean {
  if (issue.path.length === 0) return false
  if (hasInput) {
    let node: unknown = input
    for (const key of issue.path.slice(0, -1)) {
      if (!node || typeof node !== 'object' || !Object.hasOwn(node, key)) return false
      node = (node as Record<PropertyKey, unknown>)[key]
    }
    const last = issue.path[issue.path.length - 1]
    return !node || typeof node !== 'object' || !Object.hasOwn(node, last) || (node as Record<PropertyKey, unknown>)[last] === undefined
  }
  return 'input' in issue && issue.input === undefined
}

function formatIssue(issue: z.core.$ZodIssue, hasInput: boolean, input: unknown): string {
  const path = issue.path.map(String).join('.')
  const where = path ? `"${path}"` : 'the arguments'
  switch (issue.code) {
    case 'invalid_type':
      if (isMissing(issue, hasInput, input)) return `missing required property ${where}`
      return `${where} must be ${article(issue.expected)}`
    case 'invalid_value':
      return `${where} must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`
    case 'too_small':
      if (issue.origin === 'string') return `${where} must not be shorter than ${issue.minimum} character(s)`
      return `${where} must be ${issue.inclusive ? 'at least' : 'greater than'} ${issue.minimum}`
    case 'too_big':
      if (issue.origin === 'string') return `${where} must not be longer than ${issue.maximum} character(s)`
      return `${where} must be ${issue.inclusive ? 'at most' : 'less than'} ${issue.maximum}`
    case 'unrecognized_keys':
      return `unknown propert${issue.keys.length === 1 ? 'y' : 'ies'} ${issue.keys.map((k) => `"${k}"`).join(', ')}`
    default:
      return path ? `${where}: ${issue.message}` : issue.message
  }
}

function article(type: string): string {
  if (type === 'int') return 'an integer'
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`
}
