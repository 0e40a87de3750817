import type { TerminalModes } from '@deepseek-ai/dsh-bash'

/**
 * Reads the two flags of `TerminalModes` from `stty -a` output (GNU, BusyBox and BSD print the
 * local flags as words: `echo` or `-echo`, `icanon` or `-icanon`). The container agent answers in
 * the same words. Undefined unless both flags are there, exactly once each: a text that does not
 * say is never read as "echo off".
 */
export function parseSttyModes(text: string): TerminalModes | undefined {
  const words = text.split(/[\s;]+/)
  const flag = (name: string): boolean | undefined => {
    const on = words.filter((word) => word === name).length
    const off = words.filter((word) => word === `-${name}`).length
    if (on + off !== 1) return undefined
    return on === 1
  }
  const echo = flag('echo')
  const canonical = flag('icanon')
  if (echo === undefined || canonical === undefined) return undefined
  return { echo, canonical }
}
