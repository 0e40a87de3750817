/**
 * @deepseek-ai/dsh-tools — `ctx.tools`: the tool registry and the pipeline every tool call takes.
 *
 * Flow at a glance: a front end (MCP server, CLI, agent loop) calls `ctx.tools.execute(request)`
 * (registry.ts) → the arguments are snapshotted, lossless JSON, frozen (snapshot.ts) → parsed by the
 * tool's zod schema, issues worded by validate.ts → offered to the `tools/pre-execute` listeners
 * (a policy: allow / deny / ask; ask goes to the `approval` service with `approvalText`,
 * approval-text.ts) → through the `tools/execute` middleware → the tool → observers. Every throw
 * becomes an error result (`Error: <message>`, coded by errors.ts). The seam's types are types.ts;
 * the optional `secretInput` service is secret-input.ts. Depends on no other package.
 */
export * from './types.js'
export { ToolRegistry, textResult, errorResult, messageOf, UNKNOWN_ERROR, type HookOptions } from './registry.js'
export { snapshotArguments } from './snapshot.js'
export { serviceObject } from './service-object.js'
export { formatIssues } from './validate.js'
export { codedError, codeOf, hasCode, TOOL_ERROR, CALLER_ERROR, type CodedError } from './errors.js'
export type { SecretInputService, SecretInputRequest, SecretInputAnswer, LaterReply } from './secret-input.js'
export { approvalReasons, approvalText, approvalTooLong, MAX_APPROVAL_TEXT, textLength, visibleText } from './approval-text.js'
