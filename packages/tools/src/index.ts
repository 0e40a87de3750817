export * from './types.js'
export { ToolRegistry, textResult, errorResult, messageOf, type HookOptions } from './registry.js'
export { snapshotArguments } from './snapshot.js'
export { formatIssues } from './validate.js'
