export * from './types.js'
export { BashExecutor } from './executor.js'
export { BASH_ERROR, type BashErrorCode, codedError, hasCode, unknownTaskError } from './errors.js'
export { isDirectory, messageOf, sleep } from './util.js'
