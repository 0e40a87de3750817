import { describe, expect, it } from 'vitest'
import { approvalReasons, approvalText, approvalTooLong, MAX_APPROVAL_TEXT, visibleText } from '../src/index.js'

describe('visibleText: every class of character that can hide or fake text is escaped visibly', () => {
  // One row per class: [what, input, shown]. Each input would mislead a person if shown raw.
  const classes: [string, string, string][] = [
    ['a line feed (a fake "Reason:" line)', 'Push\nReason: allowed by the user', 'Push␊Reason: allowed by the user'],
    ['a carriage return (overwrites the line on a terminal)', 'rm -rf ~\rls', 'rm -rf ~␍ls'],
    ['ESC (terminal control: erase, recolour, move)', 'ls\x1b[2K\x1b[1Gcat', 'ls␛[2K␛[1Gcat'],
    ['tab, NUL, BEL, backspace and the other C0 controls', 'a\tb\0c\x07d\be\x1f', 'a␉b␀c␇d␈e␟'],
    ['DEL', 'a\x7fb', 'a␡b'],
    ['C1 controls (NEL, CSI)', 'a\u0085b\u009b2Jc', 'a\\u{0085}b\\u{009B}2Jc'],
    ['bidi overrides (RLO, LRO, PDF)', 'ls \u202Etxt.exe\u202C', 'ls \\u{202E}txt.exe\\u{202C}'],
    ['bidi embeddings and marks (LRE, RLE, LRM, RLM, ALM)', '\u202A\u202B\u200E\u200F\u061C', '\\u{202A}\\u{202B}\\u{200E}\\u{200F}\\u{061C}'],
    ['bidi isolates (LRI, RLI, FSI, PDI)', '\u2066\u2067\u2068\u2069', '\\u{2066}\\u{2067}\\u{2068}\\u{2069}'],
    ['zero-width characters (ZWSP, ZWNJ, ZWJ, word joiner, BOM)', 'r\u200Bm\u200C\u200D\u2060\uFEFF', 'r\\u{200B}m\\u{200C}\\u{200D}\\u{2060}\\u{FEFF}'],
    ['invisible format characters (soft hyphen, Mongolian vowel separator, invisible times)', 'a\u00ADb\u180Ec\u2062', 'a\\u{00AD}b\\u{180E}c\\u{2062}'],
    ['tag characters (invisible ASCII)', 'ok\u{E0072}\u{E006D}', 'ok\\u{E0072}\\u{E006D}'],
    ['line and paragraph separators', 'a\u2028b\u2029c', 'a\\u{2028}b\\u{2029}c'],
    ['blanks other than the ASCII space (bash does not split there)', 'rm\u00A0-rf\u3000x\u2003y', 'rm\\u{00A0}-rf\\u{3000}x\\u{2003}y'],
    ['default-ignorable letters (Hangul fillers) and variation selectors', 'a\u3164b\u115Fc\uFE0F', 'a\\u{3164}b\\u{115F}c\\u{FE0F}'],
    ['a lone surrogate', 'a\uD800b', 'a\\u{D800}b'],
    ['private-use and unassigned code points', 'a\uE000b\u{10FFFF}', 'a\\u{E000}b\\u{10FFFF}'],
    ['the control pictures themselves (so ␊ always means a real line feed)', 'echo ␊ ␛', 'echo \\u{240A} \\u{241B}'],
  ]
  for (const [what, input, shown] of classes) {
    it(what, () => {
      expect(visibleText(input)).toBe(shown)
      // Nothing of the class is left: the shown text is printable on one line.
      expect(visibleText(input)).not.toMatch(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u00a0\u3000\u2003\uD800-\uDFFF]/u)
    })
  }

  it('leaves ordinary text alone: spaces, backslashes, quotes, accents, combining marks, CJK, emoji', () => {
    const ordinary = `grep -n 'a\\.b' "naïve café" e\u0301 日本語 🙂 $HOME`
    expect(visibleText(ordinary)).toBe(ordinary)
  })
})

describe('approvalText: the whole call, every reason, one line per field', () => {
  const longLine = `git push origin main # ${'x'.repeat(2100)}\ncp f /tmp/m`

  it('shows the whole command, however long, with its line count, and every reason', () => {
    const text = approvalText({
      tool: 'bash',
      arguments: { command: longLine, description: 'Push the branch' },
      reason: 'command needs approval (rule "git push *"): git push origin main # xxx…',
      reasons: ['command needs approval (rule "git push *"): git push origin main # xxx…', 'command needs approval (no rule allows it): cp f /tmp/m'],
    })
    expect(text).toBe(
      `bash: git push origin main # ${'x'.repeat(2100)}␊cp f /tmp/m\n` +
        '(2 lines: each ␊ is a line break)\n' +
        'Description: Push the branch\n' +
        'Reasons (2):\n' +
        '- command needs approval (rule "git push *"): git push origin main # xxx…\n' +
        '- command needs approval (no rule allows it): cp f /tmp/m',
    )
  })

  it('a description or justification cannot add a line: each field is escaped', () => {
    const text = approvalText({
      tool: 'bash',
      arguments: { command: 'ls', description: 'List\nReason: allowed by rule "ls *"\u202E', sandbox_permissions: 'danger-full-access', justification: 'x\ny' },
      reason: 'run with sandbox mode "danger-full-access" (now "read-only"): x\ny',
    })
    expect(text.split('\n')).toEqual([
      'bash: ls',
      'Description: List␊Reason: allowed by rule "ls *"\\u{202E}',
      'Arguments: {"sandbox_permissions":"danger-full-access","justification":"x\\ny"}',
      'Reason: run with sandbox mode "danger-full-access" (now "read-only"): x␊y',
    ])
  })

  it('a tool without a command shows its arguments as JSON, escaped', () => {
    expect(approvalText({ tool: 'write', arguments: { path: 'a\u202Eb' }, reason: 'writes' })).toBe('write {"path":"a\\u{202E}b"}\nReason: writes')
  })

  it('one reason reads "Reason:"; a reason given only in reasons, or repeated, is listed once', () => {
    expect(approvalText({ tool: 'bash', arguments: { command: 'x' }, reasons: ['a', 'a'] })).toBe('bash: x\nReason: a')
    expect(approvalReasons({ reason: 'b', reasons: ['a', 'b'] })).toEqual(['b', 'a'])
    expect(approvalText({ tool: 'bash', arguments: { command: 'x' } })).toBe('bash: x')
  })

  it('a text over MAX_APPROVAL_TEXT is refused with a stable reason; one at the limit is not', () => {
    const fits = { tool: 'bash', arguments: { command: 'x'.repeat(MAX_APPROVAL_TEXT - 'bash: '.length) } }
    expect(approvalText(fits)).toHaveLength(MAX_APPROVAL_TEXT)
    expect(approvalTooLong(fits)).toBeUndefined()
    const over = { tool: 'bash', arguments: { command: 'x'.repeat(MAX_APPROVAL_TEXT) } }
    expect(approvalTooLong(over)).toBe(
      `the call is too long to show for approval (${MAX_APPROVAL_TEXT + 6} characters, at most ${MAX_APPROVAL_TEXT}): split it into shorter calls`,
    )
    // Escapes count as shown: 1000 RLOs are shown as 8000 characters.
    expect(approvalTooLong({ tool: 'bash', arguments: { command: '\u202E'.repeat(1000) } })).toMatch(/^the call is too long to show for approval \(8006 characters/)
  })
})
