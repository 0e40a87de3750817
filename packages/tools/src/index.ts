export * from './types.js'
export { ToolRegistry, textResult, errorResult, messageOf, codeOf, UNKNOWN_ERROR, type HookOptions } from './registry.js'
export { snapshotArguments } from './snapshot.js'
export { formatIssues } from './validate.js'
