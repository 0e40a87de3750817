export * from './types.js'
export { BashExecutor, unknownTaskError } from './executor.js'
