import type { ResourceFacts } from '@deepseek-ai/dsh-bash'
import type { LaunchedCommand } from './launched.js'

/**
 * The backend's resource facts as result fields, only those it measured (absent, never zero). A
 * throwing backend measured nothing: the result stands without them.
 */
export function usageFields(launched: LaunchedCommand): ResourceFacts {
  let facts: ResourceFacts | undefined
  try {
    facts = launched.resourceFacts?.()
  } catch {
    return {}
  }
  return {
    ...(facts?.cpuMs !== undefined ? { cpuMs: facts.cpuMs } : {}),
    ...(facts?.peakMemoryBytes !== undefined ? { peakMemoryBytes: facts.peakMemoryBytes } : {}),
    ...(facts?.limitReached && Object.keys(facts.limitReached).length > 0 ? { limitReached: facts.limitReached } : {}),
  }
}
