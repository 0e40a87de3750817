/**
 * In a double-byte locale (GBK, BIG5, Shift-JIS, GB18030) the last byte of a UTF-8 character and
 * the ASCII byte after it can be read as one character, which can hide a delimiter, a backslash,
 * a quote or a bracket from a program that reads its argument character by character (sed, awk).
 * The locale is not in the command line, so a reader refuses such a pair.
 */
export function joinableBytes(text: string): boolean {
  for (let i = 0; i + 1 < text.length; i++) {
    if (text[i] > '\x7f' && /[0-9@-~]/.test(text[i + 1])) return true
  }
  return false
}

export const JOINABLE_BYTES = 'a non-ASCII character is followed by an ASCII one that a double-byte locale could join to it'
