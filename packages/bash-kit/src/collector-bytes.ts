/**
 * Byte-level helpers of the output collector (collector.ts): whole writes to the spill file, and
 * where a cut tail may resume without splitting a line or a UTF-8 character.
 */
import { writeSync } from 'node:fs'

/** Never fatal (a command's bytes are whatever it printed); a BOM is kept as text. */
export const decoderOptions = { fatal: false, ignoreBOM: true } as const

export function writeFully(fd: number, bytes: Uint8Array): void {
  let offset = 0
  while (offset < bytes.length) offset += writeSync(fd, bytes, offset, bytes.length - offset)
}

export const LF = 0x0a

/**
 * Where a read resumes in a tail whose first line lost its beginning: just after the first newline
 * (a newline byte is never part of a multi-byte character), or, with none, at the first character
 * boundary.
 */
export function restartAfterLoss(tail: Uint8Array): number {
  const newline = tail.indexOf(LF)
  return newline >= 0 ? newline + 1 : leadingContinuationBytes(tail)
}

/** UTF-8 continuation bytes (10xxxxxx) at the start of a tail: the rest of a character cut off in front. */
export function leadingContinuationBytes(bytes: Uint8Array): number {
  let n = 0
  while (n < bytes.length && n < 3 && (bytes[n] & 0xc0) === 0x80) n++
  return n
}

export function decodeAll(bytes: Uint8Array): string {
  return scrubNul(new TextDecoder('utf-8', decoderOptions).decode(bytes))
}

/** A NUL byte never reaches the model (many clients and APIs truncate or reject strings with NUL). */
export function scrubNul(text: string): string {
  return text.includes('\0') ? text.replaceAll('\0', '\uFFFD') : text
}
