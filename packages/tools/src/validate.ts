import type { z } from 'zod'

/**
 * Turns zod issues into the pipeline's stable messages:
 * `missing required property "command"`, `"command" must be a string`, … joined by `; `.
 */
export function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues.map(formatIssue).join('; ')
}

function formatIssue(issue: z.core.$ZodIssue): string {
  const path = issue.path.map(String).join('.')
  const where = path ? `"${path}"` : 'the arguments'
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined && path) return `missing required property ${where}`
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
