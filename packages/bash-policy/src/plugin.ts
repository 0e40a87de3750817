import type { Context } from 'cordis'
import type { PreExecuteDecision, ToolCall } from '@deepseek-ai/dsh-tools'
import { resolve } from 'node:path'
import { decide } from './decide.js'
import { loadParser } from './parser.js'
import { definePolicy, loadPolicyFile } from './policy-file.js'
import type { Policy } from './types.js'

export interface BashPolicyConfig {
  /** The policy itself (validated like a file). */
  policy?: Policy | Record<string, unknown>
  /** A JSON or YAML policy file, read once when the plugin starts. */
  file?: string
  /** The tool whose `command` argument is checked. Default `bash`. */
  tool?: string
  /** The listener's `tools/pre-execute` order. Default 0. */
  order?: number
}

/**
 * The command policy as a cordis plugin: a `tools/pre-execute` listener for the `bash` tool that
 * answers allow, deny or ask (the `approval` service then decides). Without a policy or a file it
 * adds nothing.
 *
 * A file that cannot be loaded does not leave the tool unguarded: the plugin then denies every
 * call of the tool, saying why, and logs the error. A host that wants to refuse to start should call
 * `loadPolicyFile` itself first.
 */
export const BashPolicy = {
  name: 'bash-policy',
  inject: ['tools'],
  apply(ctx: Context, config: BashPolicyConfig = {}) {
    const tool = config.tool ?? 'bash'
    let policy: Policy | undefined
    let failure: string | undefined
    try {
      if (config.file) policy = loadPolicyFile(resolve(config.file))
      else if (config.policy) policy = definePolicy(config.policy)
    } catch (error) {
      failure = (error as Error).message
      ctx.logger('dsh-bash-policy').error(failure)
    }
    if (!policy && !failure) return
    // Start loading the parser now so the first call does not pay for it.
    loadParser().catch(() => {})
    ctx.tools.onPreExecute(
      async (call: ToolCall): Promise<PreExecuteDecision | undefined> => {
        if (call.name !== tool) return undefined
        if (!policy) return { kind: 'deny', reason: `the bash policy could not be loaded: ${failure}` }
        const command = call.args.command
        if (typeof command !== 'string') return { kind: 'deny', reason: 'the bash policy found no command to check' }
        // An interactive task takes keystrokes nobody checks: it needs an `interactive` rule (decide.ts).
        const decision = await decide(policy, command, { interactive: call.args.interactive === true })
        // The deciding rule rides along for audit logs and traces (dsh-tools' CallFacts); the texts are unchanged.
        const rule = decision.rule === undefined ? {} : { rule: decision.rule }
        if (decision.kind === 'allow') return { kind: 'allow' }
        if (decision.kind === 'deny') return { kind: 'deny', reason: decision.reason, ...rule }
        // Every reason, so the person sees each command that needs approval, not only the first.
        return { kind: 'ask', reason: decision.reason, reasons: decision.reasons, ...rule }
      },
      { order: config.order ?? 0 },
    )
  },
}
