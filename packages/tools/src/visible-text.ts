/**
 * Characters that can hide, reorder or fake what a person reads: controls (C0, DEL, C1: a line
 * break starts a fake line, ESC drives the terminal, CR overwrites), format characters (bidi
 * overrides and isolates, zero-width characters, tag characters, the soft hyphen, the BOM), line
 * and paragraph separators, surrogates, private-use and unassigned code points, other
 * default-ignorable ones (Hangul fillers, variation selectors), and every blank but the ASCII space
 * (bash splits words at ASCII blanks only). The control pictures U+2400–U+243F are escaped too, so
 * that a ␊ shown always stands for a real line feed.
 */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}\p{Default_Ignorable_Code_Point}\u2400-\u243f]/gu

/**
 * Model-controlled text made safe to show a person (a command line, a prompt): every character of
 * the classes above is replaced by a visible escape, so the text stays on one line and reads as it
 * is. C0 controls and DEL become their control pictures (line feed `␊`, carriage return `␍`, tab
 * `␉`, ESC `␛`, DEL `␡`); anything else becomes `\u{XXXX}` (U+202E → `\u{202E}`). Everything else,
 * backslashes included, is unchanged. Not HTML-safe: a page escapes the result for HTML as well.
 */
export function visibleText(text: string): string {
  return text.replace(HIDDEN, (ch) => {
    if (ch === ' ') return ch
    const code = ch.codePointAt(0)!
    if (code < 0x20) return String.fromCodePoint(0x2400 + code)
    if (code === 0x7f) return '\u2421'
    return `\\u{${code.toString(16).toUpperCase().padStart(4, '0')}}`
  })
}
