/**
 * @deepseek-ai/dsh-tool-bash — the model-facing tools `bash`, `bash_output`, `bash_kill`, `bash_input`.
 *
 * Flow at a glance: `ToolBash` (plugin.ts) registers the four tools with `ctx.tools` (schemas in
 * schema.ts, descriptions in descriptions.ts) → a call is checked, its workdir and owner taken from
 * the calling agent's session, and sent to `ctx.bash` (resolve, run / start / readOutput / write /
 * kill) → waits for output run in wait.ts (with `until`, until.ts) → the result becomes text in
 * render.ts (within budget.ts's budget, model lookalike lines escaped by lookalike.ts, byte ranges
 * by range.ts) and facts in structured.ts; present.ts renders calls for UIs. `ask_user` replies go
 * through secret-input.ts and stay masked (reply-mask.ts). A task's end is injected into its
 * owner's agent (`onTaskDone` in plugin.ts). Coded errors: errors.ts.
 */
export { ToolBash, NOTICE_SOURCE, type NoticeTarget, type ToolBashConfig } from './plugin.js'
export * from './render.js'
export * from './schema.js'
export {
  BASH_DESCRIPTION,
  BASH_OUTPUT_DESCRIPTION,
  BASH_KILL_DESCRIPTION,
  BASH_INPUT_DESCRIPTION,
  SANDBOX_ADDENDUM,
  bashDescription,
  bashPromptSection,
  yieldSentence,
} from './descriptions.js'
export { type ResultBudget, checkBudget, tailWithin, lineCount, fits, MARKER_RESERVE, spillThreshold } from './budget.js'
export { presentBashCall, presentBashResult, presentTaskCall, presentTaskResult, readRunStatus, type RunStatus } from './present.js'
export { TOOL_BASH_ERROR, toolBashErrors, foreignTaskMessage } from './errors.js'
export {
  askUserShape,
  checkInputChoice,
  sendUserReply,
  secretInputErrors,
  SECRET_INPUT_ERROR,
  TYPED_TEXT,
  ASK_USER_SENTENCE,
  waitingText,
  laterNotices,
  type UserReplyOutcome,
} from './secret-input.js'
export { ReplyMask, HIDDEN_REPLY, MIN_HIDDEN_REPLY } from './reply-mask.js'
export { waitForOutput, GatheredRead, Carry, QUIET_MS, type WaitRule, type Waited } from './wait.js'
export { UntilMatcher, checkUntil, UNTIL_LIMIT_MS, UNTIL_LINE_CHARS, UNTIL_MAX_CHARS } from './until.js'
export { OWN_LINE_OPENINGS, ESCAPE, escapeOutput, unescapeOutput, readsAsOurs } from './lookalike.js'
export { bashOutputSchema, BASH_ANNOTATIONS, BASH_STATUSES, type BashStatus, type BashStructured, errorStructure, runStructure, taskStructure, taskStatus } from './structured.js'
export { renderRange, rangeRef, rangeLimits, DEFAULT_RANGE_BYTES } from './range.js'
