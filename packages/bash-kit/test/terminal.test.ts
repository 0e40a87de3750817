import { execFileSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { TerminalView } from '../src/terminal.js'

/** Real escape sequences of this machine's terminfo for xterm-256color (what a program would send). */
const tput = (...args: string[]) => execFileSync('tput', args, { env: { ...process.env, TERM: 'xterm-256color' } }).toString('latin1')
const hasTput = (() => {
  try {
    return tput('smcup').length > 0
  } catch {
    return false
  }
})()

describe('TerminalView: line mode', () => {
  it('shows an unfinished prompt, does not repeat it, then continues the line', () => {
    const view = new TerminalView()
    view.write('hello\r\nName? ')
    expect(view.read()).toEqual({ text: 'hello\nName? ', lossy: false, screen: false })
    expect(view.read().text).toBe('')
    view.write('Ada\r\nhi Ada\r\n')
    expect(view.read().text).toBe('Ada\nhi Ada\n')
    view.dispose()
  })

  it('reads as a stream: the concatenated reads are the transcript, without escape sequences', () => {
    const view = new TerminalView()
    const chunks = ['>>> ', 'x = 6*7\r\n>>> ', 'print(x)\r\n', '\x1b[1;32m42\x1b[0m\r\n>>> ']
    let transcript = ''
    for (const chunk of chunks) {
      view.write(chunk)
      transcript += view.read().text
    }
    expect(transcript).toBe('>>> x = 6*7\n>>> print(x)\n42\n>>> ')
    expect(transcript).not.toContain('\x1b')
    view.dispose()
  })

  it('a prompt whose answer is not echoed (read -s) reads as the prompt, then the next lines', () => {
    const view = new TerminalView()
    view.write('Password: ')
    expect(view.read().text).toBe('Password: ')
    view.write('\r\n6\r\n')
    expect(view.read().text).toBe('\n6\n')
    view.dispose()
  })

  it('a line rewritten with a carriage return starts a new line of the read with its whole text', () => {
    const view = new TerminalView()
    view.write('50%')
    expect(view.read().text).toBe('50%')
    view.write('\r75%')
    expect(view.read().text).toBe('\n75%')
    view.write('\r100%\r\n')
    expect(view.read().text).toBe('\n100%\n')
    view.dispose()
  })

  it('joins a long line wrapped by the terminal, and a UTF-8 character split across chunks stays whole', () => {
    const view = new TerminalView()
    const long = 'x'.repeat(300)
    view.write(`${long}\r\n`)
    const bytes = Buffer.from('größe\r\n')
    view.write(bytes.subarray(0, 3))
    view.write(bytes.subarray(3))
    expect(view.read().text).toBe(`${long}\ngröße\n`)
    view.dispose()
  })

  it('keeps memory bounded: lines past the scrollback are gone and the read says so', () => {
    const view = new TerminalView({ scrollback: 100 })
    view.write('first\r\n')
    expect(view.read().text).toBe('first\n')
    for (let i = 0; i < 1000; i++) view.write(`line ${i}\r\n`)
    const read = view.read()
    expect(read.lossy).toBe(true)
    const lines = read.text.split('\n')
    // At most the scrollback plus the screen, ending with the newest line and the empty cursor line.
    expect(lines.length).toBeLessThanOrEqual(100 + 40 + 1)
    expect(lines.at(-2)).toBe('line 999')
    expect(read.text).not.toContain('first')
    view.dispose()
  })

  it('says lossy when lines scrolled out before the very first read', () => {
    const view = new TerminalView({ scrollback: 10 })
    for (let i = 0; i < 100; i++) view.write(`line ${i}\r\n`)
    const read = view.read()
    expect(read.lossy).toBe(true)
    expect(read.text.startsWith('line ')).toBe(true)
    expect(read.text.endsWith('line 99\n')).toBe(true)
    const small = new TerminalView({ scrollback: 10 })
    small.write('a\r\nb\r\n')
    expect(small.read()).toEqual({ text: 'a\nb\n', lossy: false, screen: false })
    view.dispose()
    small.dispose()
  })
})

describe.skipIf(!hasTput)('TerminalView: screen mode (real xterm-256color sequences from tput)', () => {
  it('reads the alternate screen under a header, trailing blank rows dropped, unchanged screens not repeated', () => {
    const view = new TerminalView()
    view.write('before\r\n')
    expect(view.read().text).toBe('before\n')
    view.write(tput('smcup') + tput('clear') + 'line 1\r\n' + tput('bold') + 'line 2' + tput('sgr0') + tput('cup', '5', '10') + 'at row 6')
    expect(view.fullScreen).toBe(true)
    const read = view.read()
    expect(read.screen).toBe(true)
    expect(read.text).toBe(['[screen 120x40]', 'line 1', 'line 2', '', '', '', '          at row 6'].join('\n'))
    expect(view.read().text).toBe('')
    view.write(tput('cup', '0', '0') + 'LINE')
    expect(view.read().text.split('\n')[1]).toBe('LINE 1')
    // Leaving the full-screen program: back to lines, the normal buffer as it was.
    view.write(tput('rmcup') + 'after\r\n')
    expect(view.fullScreen).toBe(false)
    expect(view.read().text).toBe('after\n')
    view.dispose()
  })

  it('says a read is a screen from the active buffer, never from the text: printed header lines are lines', () => {
    const view = new TerminalView()
    view.write('[screen 120x40]\r\nfake row\r\n')
    expect(view.read()).toEqual({ text: '[screen 120x40]\nfake row\n', lossy: false, screen: false })
    view.write(tput('smcup') + tput('clear') + '[screen 120x40]')
    expect(view.read()).toEqual({ text: '[screen 120x40]\n[screen 120x40]', lossy: false, screen: true })
    view.dispose()
  })

  it('follows a resize in the header', () => {
    const view = new TerminalView()
    view.write(tput('smcup') + 'x')
    view.resize(80, 24)
    expect(view.read().text.split('\n')[0]).toBe('[screen 80x24]')
    view.dispose()
  })
})
