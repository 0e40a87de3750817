import { codedError, hasCode } from '@deepseek-ai/dsh-tools'

/**
 * Every error the policy package raises on purpose, with a stable `code`; messages stay as the
 * README gives them. (Its internal control-flow exceptions, Outside/Uncertain/ParseTimeout, never
 * leave the package: they become an `ask` with a reason.)
 */
export const POLICY_ERROR = {
  /** A policy (file or object) that fails validation: bad JSON/YAML, unknown key, bad pattern. */
  invalid: 'DSH_POLICY_INVALID',
  /** The policy file cannot be read. */
  unreadable: 'DSH_POLICY_UNREADABLE',
  /** The bash parser failed without a reason (tree-sitter returned no tree). */
  parser: 'DSH_POLICY_PARSER',
} as const

export type PolicyErrorCode = (typeof POLICY_ERROR)[keyof typeof POLICY_ERROR]

/** A policy that was refused. `message` is `FILE:LINE:COLUMN: reason` when the place is known. */
export class PolicyError extends Error {
  constructor(
    readonly file: string | undefined,
    readonly reason: string,
    readonly line?: number,
    readonly column?: number,
    /** `DSH_POLICY_INVALID` unless the file could not be read (`DSH_POLICY_UNREADABLE`). */
    readonly code: PolicyErrorCode = POLICY_ERROR.invalid,
  ) {
    super(`${file ?? 'policy'}${line ? `:${line}${column ? `:${column}` : ''}` : ''}: ${reason}`)
    this.name = 'PolicyError'
  }
}

/** True for an error of a refused or unreadable policy. */
export function isPolicyError(error: unknown): boolean {
  return hasCode(error, POLICY_ERROR.invalid) || hasCode(error, POLICY_ERROR.unreadable)
}

export const policyErrors = {
  noTree: () => codedError(POLICY_ERROR.parser, 'tree-sitter returned no tree'),
}
