/**
 * The agent protocol's framing (docs/agent-protocol.md): `<op> <id> <length>\n` then `length`
 * payload bytes, both ways. Ops and ids are printable words; payloads are bytes.
 */
export function encodeFrame(op: string, id: string, payload: Buffer | string = ''): Buffer {
  const data = typeof payload === 'string' ? Buffer.from(payload) : payload
  return Buffer.concat([Buffer.from(`${op} ${id} ${data.length}\n`, 'latin1'), data])
}

/** The longest header a reader waits for before it calls the stream broken. */
const MAX_HEADER = 512

/** What the hello frame starts with: a reader that skips a preamble looks for it. */
export const HELLO_START = Buffer.from('hello 0 ')

/** Splits a byte stream into frames. */
export class FrameReader {
  private pending: Buffer = Buffer.alloc(0)
  private inPreamble: boolean

  /**
   * @param preambleBytes bytes that may come before the hello frame and are skipped (a login
   *   shell's greeting over SSH); 0: the first byte must begin a frame.
   */
  constructor(
    private readonly onFrame: (op: string, id: string, payload: Buffer) => void,
    private readonly onBroken: (data: Buffer) => void,
    private readonly preambleBytes = 0,
  ) {
    this.inPreamble = preambleBytes > 0
  }

  push(chunk: Buffer): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk])
    if (this.inPreamble) {
      const at = this.pending.indexOf(HELLO_START)
      if (at < 0) {
        if (this.pending.length > this.preambleBytes) this.broken()
        return
      }
      this.pending = this.pending.subarray(at)
      this.inPreamble = false
    }
    for (;;) {
      const newline = this.pending.indexOf(0x0a)
      if (newline < 0) {
        if (this.pending.length > MAX_HEADER) this.broken()
        return
      }
      const [op, id, lengthText, extra] = this.pending.subarray(0, newline).toString('latin1').split(' ')
      const length = Number(lengthText)
      if (!op || !id || extra !== undefined || !/^\d+$/.test(lengthText ?? '') || !Number.isSafeInteger(length)) return this.broken()
      if (this.pending.length < newline + 1 + length) return
      const payload = this.pending.subarray(newline + 1, newline + 1 + length)
      this.pending = this.pending.subarray(newline + 1 + length)
      this.onFrame(op, id, payload)
    }
  }

  private broken(): void {
    const data = this.pending
    this.pending = Buffer.alloc(0)
    this.onBroken(data)
  }
}
