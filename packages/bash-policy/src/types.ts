export type DecisionKind = 'allow' | 'ask' | 'deny'

/** A validated policy. Build one with `parsePolicy`, `loadPolicyFile` or `definePolicy`. */
export interface Policy {
  /** What happens to a command no rule matches. */
  readonly default: DecisionKind
  readonly deny: readonly string[]
  readonly ask: readonly string[]
  readonly allow: readonly string[]
  /** A line with more simple commands than this is `ask`. */
  readonly maxCommands: number
  /** A line longer than this many UTF-8 bytes is `ask`, unparsed. */
  readonly maxCommandBytes: number
}

/** The outcome for one command line. */
export interface Decision {
  kind: DecisionKind
  /** Why, for `ask` and `deny`: one of the messages documented in the README. */
  reason?: string
  /** The simple command that decided, as shown in `reason`. */
  command?: string
  /** The rule that decided, if one did. */
  rule?: string
}
