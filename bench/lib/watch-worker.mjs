/**
 * Worker thread: polls a fixed set of pids every ~2 ms (off the main thread, so the executor's
 * event loop is not slowed by the watching) and reports when none is alive any more.
 * workerData: {pids}; posts {ready: <live count>} after its first poll, then {goneAt} (ms, performance.timeOrigin-based wall clock).
 */
import { parentPort, workerData } from 'node:worker_threads'
import { isLive } from './proc.mjs'

let left = [...workerData.pids]
let stopped = false
parentPort.on('message', (message) => {
  if (message === 'stop') stopped = true
})
const now = () => performance.timeOrigin + performance.now()
let first = true
while (!stopped) {
  left = left.filter(isLive)
  if (first) {
    parentPort.postMessage({ ready: left.length })
    first = false
  }
  if (left.length === 0) {
    parentPort.postMessage({ goneAt: now() })
    break
  }
  await new Promise((resolve) => setTimeout(resolve, 2))
}
