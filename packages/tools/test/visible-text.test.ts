import { describe, expect, it } from 'vitest'
import { visibleText } from '../src/index.js'

describe('visibleText: model-controlled text made safe to show a person', () => {
  it('leaves ordinary text alone, backslashes, quotes, markup and non-Latin letters included', () => {
    const plain = `git log --oneline | sed 's/\\./x/' "naïve" <b> 日本語 😀`
    expect(visibleText(plain)).toBe(plain)
  })

  it('shows every C0 control and DEL as its control picture: one line, no escape sequence, no overwrite', () => {
    expect(visibleText('a\nb\rc\td\u001b[2Ke\u0000f\u007fg')).toBe('a␊b␍c␉d␛[2Ke␀f␡g')
    for (let code = 0; code < 0x20; code++) expect(visibleText(String.fromCharCode(code))).toBe(String.fromCodePoint(0x2400 + code))
  })

  it('shows C1 controls, bidi overrides and isolates, zero-width and other invisible or look-alike characters as \\u{…}', () => {
    const cases: Array<[string, string]> = [
      ['\u0085', '\\u{0085}'], // NEL, a C1 line break
      ['\u009b', '\\u{009B}'], // CSI
      ['\u202e', '\\u{202E}'], // RIGHT-TO-LEFT OVERRIDE
      ['\u2066', '\\u{2066}'], // LEFT-TO-RIGHT ISOLATE
      ['\u200b', '\\u{200B}'], // ZERO WIDTH SPACE
      ['\u00ad', '\\u{00AD}'], // SOFT HYPHEN
      ['\ufeff', '\\u{FEFF}'], // BOM
      ['\u2028', '\\u{2028}'], // LINE SEPARATOR
      ['\u00a0', '\\u{00A0}'], // NO-BREAK SPACE (not a word break for bash)
      ['\u3164', '\\u{3164}'], // HANGUL FILLER (invisible, a letter)
      ['\ud800', '\\u{D800}'], // a lone surrogate
      ['\u{e0041}', '\\u{E0041}'], // TAG LATIN CAPITAL LETTER A
    ]
    for (const [input, shown] of cases) expect(visibleText(`x${input}y`)).toBe(`x${shown}y`)
  })

  it('escapes a literal control picture too, so that ␊ always stands for a real line feed', () => {
    expect(visibleText('␊')).toBe('\\u{240A}')
    expect(visibleText('\n')).toBe('␊')
  })
})
