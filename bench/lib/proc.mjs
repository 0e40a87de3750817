/** /proc helpers of the bench (independent of the executor's own). */
import { readdirSync, readFileSync } from 'node:fs'

export function allPids() {
  const pids = []
  for (const name of readdirSync('/proc')) {
    const pid = Number(name)
    if (Number.isInteger(pid) && pid > 0) pids.push(pid)
  }
  return pids
}

/** Live (not zombie) process? */
export function isLive(pid) {
  let text
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'latin1')
  } catch {
    return false
  }
  const state = text.slice(text.lastIndexOf(')') + 2, text.lastIndexOf(')') + 3)
  return state !== 'Z' && state !== 'X'
}

/** Live processes whose NUL-separated argv contains `needle` (a string or RegExp over argv joined by \0). */
export function pidsMatching(needle) {
  const found = []
  for (const pid of allPids()) {
    if (pid === process.pid) continue
    let cmdline
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'latin1')
    } catch {
      continue
    }
    const hit = typeof needle === 'string' ? cmdline.includes(needle) : needle.test(cmdline)
    if (hit && isLive(pid)) found.push(pid)
  }
  return found
}
