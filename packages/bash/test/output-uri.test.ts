import { describe, expect, it } from 'vitest'
import { fullOutputUri, parseFullOutputUri } from '../src/index.js'

describe('full-output URIs', () => {
  it('round-trips ids and streams; reads offset and length', () => {
    expect(fullOutputUri('run-3', 'stdout')).toBe('dsh-bash://output/run-3/stdout')
    expect(parseFullOutputUri('dsh-bash://output/run-3/stdout')).toEqual({ id: 'run-3', stream: 'stdout' })
    expect(parseFullOutputUri(fullOutputUri('a/b c', 'stderr'))).toEqual({ id: 'a/b c', stream: 'stderr' })
    expect(parseFullOutputUri('dsh-bash://output/bash-2/stderr?offset=10&length=5')).toEqual({ id: 'bash-2', stream: 'stderr', offset: 10, length: 5 })
  })

  it('names nothing for anything else', () => {
    for (const uri of [
      'file:///etc/passwd',
      'dsh-bash://output/run-3',
      'dsh-bash://output/run-3/stdin',
      'dsh-bash://output/run-3/stdout/x',
      'dsh-bash://output//stdout',
      'dsh-bash://output/%E0%A4%A/stdout',
      'dsh-bash://output/run-3/stdout?offset=-1',
      'dsh-bash://output/run-3/stdout?offset=1e3',
      'dsh-bash://output/run-3/stdout?path=/etc/passwd',
      'dsh-bash://output/run-3/stdout?offset',
    ]) {
      expect(parseFullOutputUri(uri), uri).toBeUndefined()
    }
  })
})
