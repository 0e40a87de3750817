import { z } from 'zod'
import { parseSize } from '@deepseek-ai/dsh-bash'

/**
 * Resource limits of every command (`limits` in the config of the executors that run commands as
 * processes they start: local, sandbox, SSH). Each is optional; absent means no limit. How each
 * executor enforces them, and which of them are then per process instead of per command, is in its
 * README.
 */

const size = (key: string) =>
  z.union([z.number(), z.string()], { error: `${key} must be a size in bytes or a string such as 512M or 4G` }).transform((value, ctx) => {
    const bytes = parseSize(value)
    if (bytes === undefined || bytes <= 0) {
      ctx.addIssue({ code: 'custom', message: `${key} must be a positive size such as 512M or 4G, got ${JSON.stringify(value)}` })
      return z.NEVER
    }
    return bytes
  })

export const limitsSchema = z
  .object({
    /** Memory of the command's processes together (bytes; `512M`, `4G`); no swap beyond it. */
    memory: size('memory').optional(),
    /** Processes (and threads) of the command at once. */
    pids: z.number({ error: 'pids must be a number' }).int('pids must be an integer').positive('pids must be positive').optional(),
    /** CPU time per wall-clock time, in cores (`1.5`: one and a half cores). */
    cpu: z.number({ error: 'cpu must be a number' }).positive('cpu must be positive').optional(),
    /** Size of the command's private `/tmp` (and `/dev/shm`) where the executor makes one (bytes). */
    tmp: size('tmp').optional(),
  })
  .strict()

/** The validated limits (sizes in bytes). */
export type CommandLimits = z.output<typeof limitsSchema>
export type CommandLimitsInput = z.input<typeof limitsSchema>
