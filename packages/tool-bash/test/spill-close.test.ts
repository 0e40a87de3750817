import * as fs from 'node:fs'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { type App, createApp } from './harness.js'

// The spill file's final close fails (EIO: NFS, a quota): the file is not known to be intact, so no
// result may name it. Injected in node:fs for the collector (bash-kit), the real stack otherwise:
// a real local executor, real bash, the real pipeline and renderers.
const failing = vi.hoisted(() => ({ closes: false, seen: 0 }))
vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs')>()
  const spillFds = new Set<number>()
  return {
    ...real,
    openSync: ((path: fs.PathLike, ...rest: unknown[]) => {
      const fd = (real.openSync as (...a: unknown[]) => number)(path, ...rest)
      if (/dsh-bash-.*-(stdout|stderr)\.log$/.test(String(path))) spillFds.add(fd)
      return fd
    }) as typeof real.openSync,
    closeSync: ((fd: number) => {
      real.closeSync(fd)
      if (failing.closes && spillFds.delete(fd)) {
        failing.seen++
        throw Object.assign(new Error('EIO: i/o error, close'), { code: 'EIO' })
      }
    }) as typeof real.closeSync,
  }
})

describe('a spill file whose final close fails is never named', () => {
  let app: App
  beforeAll(async () => {
    app = await createApp({ maxOutputBytes: 1000 })
  })
  afterAll(async () => {
    await app.dispose()
  })
  afterEach(() => {
    failing.closes = false
  })

  it('foreground: the truncation line says (unavailable)', async () => {
    failing.closes = true
    const { text, isError } = await app.text('bash', { command: 'seq 1 5000', description: 'print numbers' })
    expect(isError).toBe(false)
    expect(failing.seen).toBeGreaterThan(0)
    expect(text.endsWith('\n5000\n\n[output truncated; full output: (unavailable)]')).toBe(true)
  })

  it('control: with a working close the file is named and holds everything', async () => {
    const { text } = await app.text('bash', { command: 'seq 1 5000', description: 'print numbers' })
    const path = /\[output truncated; full output: (\/[^\]]+)\]$/.exec(text)?.[1]
    expect(path).toBeDefined()
    expect(fs.readFileSync(path!, 'utf8').split('\n')).toHaveLength(5001)
  })

  it('background: bash_output after the end names no file', async () => {
    failing.closes = true
    const started = await app.text('bash', { command: 'seq 1 5000', description: 'print numbers', run_in_background: true })
    const id = started.text.split(' ').pop()!
    await app.root.bash.get(id)!.done
    const read = await app.text('bash_output', { task_id: id })
    expect(read.text).toContain('[some output was dropped from memory; full output: (unavailable)]')
    expect(read.text).not.toMatch(/full output: \//)
  })
})
