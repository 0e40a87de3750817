export type DecisionKind = 'allow' | 'ask' | 'deny'

/** A validated policy. Build one with `parsePolicy`, `loadPolicyFile` or `definePolicy`. */
export interface Policy {
  /** What happens to a command no rule matches. */
  readonly default: DecisionKind
  readonly deny: readonly string[]
  readonly ask: readonly string[]
  readonly allow: readonly string[]
  /**
   * Which allowed commands may also run as interactive tasks (`interactive: true`) without asking:
   * the model then types into them unchecked. Empty (the default): every interactive call asks.
   * Never allows anything by itself; see `decide`'s `interactive` option.
   */
  readonly interactive: readonly string[]
  /** A line with more simple commands than this is `ask`. */
  readonly maxCommands: number
  /** A line longer than this many UTF-8 bytes is `ask`, unparsed. */
  readonly maxCommandBytes: number
}

/** How a command line will run (`decide`'s third argument). */
export interface DecideOptions {
  /**
   * The line runs as an interactive task (`bash {interactive: true}`): what the model types into
   * it later is never checked. Then the line is `allow` only if it would be allowed anyway and
   * every simple command in it, wrappers included and not seen through, matches an `interactive`
   * rule; else each one that does not is an `ask`.
   */
  interactive?: boolean
}

/** The outcome for one command line. */
export interface Decision {
  kind: DecisionKind
  /** Why, for `ask` and `deny`: one of the messages documented in the README. */
  reason?: string
  /**
   * For `ask`: every reason, in reading order and without repeats — one per simple command that
   * needs approval, then each construct outside the safe subset. `reason` is the first. A person
   * approving the line must see all of them: the first alone can name a harmless command and hide
   * the one after it. Absent for `allow`, `deny`, and an `ask` decided before parsing (one reason).
   */
  reasons?: string[]
  /** The simple command that decided, as shown in `reason`. */
  command?: string
  /** The rule that decided, if one did. */
  rule?: string
}
