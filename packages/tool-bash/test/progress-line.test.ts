import { describe, expect, it } from 'vitest'
import { newestLineReporter } from '../src/progress-line.js'

/** The first version (every piece split into lines): the reference the cheaper one must equal. */
function splittingReporter(report: (update: { message: string }) => void) {
  const partial = { stdout: '', stderr: '' }
  let last = ''
  return (stream: 'stdout' | 'stderr', text: string) => {
    const lines = (partial[stream] + text).split('\n')
    partial[stream] = (lines.pop() ?? '').slice(-4096)
    for (let i = lines.length - 1; i >= 0; i--) {
      const line = lines[i].trim()
      if (line === '') continue
      if (line !== last) {
        last = line
        report({ message: line.length > 200 ? `${line.slice(0, 200)}…` : line })
      }
      return
    }
  }
}

describe('newestLineReporter', () => {
  it('reports what splitting every piece reported, for seeded random output in random pieces', () => {
    let seed = 31
    const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n)
    const atoms = ['a', 'b', ' ', '\t', '\n', '\n', '\n\n', '\r', 'é', '😀', 'x'.repeat(250), 'y'.repeat(5000), '  \n  \n']
    for (let trial = 0; trial < 400; trial++) {
      const got: string[] = []
      const want: string[] = []
      const ours = newestLineReporter((u) => got.push(u.message))
      const reference = splittingReporter((u) => want.push(u.message))
      for (let piece = random(30); piece >= 0; piece--) {
        const stream = random(3) === 0 ? 'stderr' : 'stdout'
        let text = ''
        for (let k = random(12); k >= 0; k--) text += atoms[random(atoms.length)]
        ours(stream, text)
        reference(stream, text)
      }
      expect(got).toEqual(want)
    }
  })

  it('a piece of blank lines starting with a newline ends (it looped forever on the newline at index 0)', () => {
    const got: string[] = []
    const report = newestLineReporter((u) => got.push(u.message))
    report('stdout', 'last')
    report('stdout', '\n\n')
    report('stdout', '\n')
    report('stdout', '\n  \n\n')
    report('stderr', '\nwarn\n\n')
    expect(got).toEqual(['last', 'warn'])
  })

  it('reports the newest complete, non-blank line of a piece holding many, once per change', () => {
    const got: string[] = []
    const report = newestLineReporter((u) => got.push(u.message))
    let text = ''
    for (let i = 1; i <= 10_000; i++) text += `${i}\n`
    report('stdout', `${text}10001`)
    report('stdout', '\n\n   \n')
    report('stderr', 'warn')
    report('stderr', 'ing: late\n')
    report('stdout', '10001\n')
    expect(got).toEqual(['10000', '10001', 'warning: late', '10001'])
  })
})
