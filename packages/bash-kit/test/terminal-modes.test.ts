import { spawnSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { parseSttyModes } from '../src/index.js'

describe('parseSttyModes', () => {
  it("reads echo and icanon from GNU stty -a (as it prints a pty's modes under read -s)", () => {
    const gnu = [
      'speed 38400 baud; rows 40; columns 120; line = 0;',
      'intr = ^C; quit = ^\\; erase = ^?; kill = ^U; eof = ^D; eol = <undef>; eol2 = <undef>; swtch = <undef>; start = ^Q; stop = ^S;',
      'susp = ^Z; rprnt = ^R; werase = ^W; lnext = ^V; discard = ^O; min = 1; time = 0;',
      '-parenb -parodd -cmspar cs8 -hupcl -cstopb cread -clocal -crtscts',
      '-ignbrk -brkint -ignpar -parmrk -inpck -istrip -inlcr -igncr icrnl ixon -ixoff -iuclc -ixany -imaxbel iutf8',
      'opost -olcuc -ocrnl onlcr -onocr -onlret -ofill -ofdel nl0 cr0 tab0 bs0 vt0 ff0',
      'isig icanon iexten -echo echoe echok -echonl -noflsh -xcase -tostop -echoprt echoctl echoke -flusho -extproc',
    ].join('\n')
    expect(parseSttyModes(gnu)).toEqual({ echo: false, canonical: true })
    expect(parseSttyModes(gnu.replace(' -echo ', ' echo ').replace(' icanon ', ' -icanon '))).toEqual({ echo: true, canonical: false })
  })

  it('reads BSD\'s and the container agent\'s words', () => {
    expect(parseSttyModes('lflags: icanon isig iexten echo echoe -echok echoke -echonl echoctl')).toEqual({ echo: true, canonical: true })
    expect(parseSttyModes('-echo -icanon')).toEqual({ echo: false, canonical: false })
  })

  it('never guesses: a missing, repeated or contradicting flag, an error text, or nothing is undefined', () => {
    expect(parseSttyModes('')).toBeUndefined()
    expect(parseSttyModes('icanon')).toBeUndefined()
    expect(parseSttyModes('-echo')).toBeUndefined()
    expect(parseSttyModes('echo -echo icanon')).toBeUndefined()
    expect(parseSttyModes('stty: \'standard input\': Inappropriate ioctl for device')).toBeUndefined()
    // echoe, echok, echonl are other flags: not the echo flag.
    expect(parseSttyModes('icanon echoe echok -echonl')).toBeUndefined()
  })

  it('stty on something that is not a terminal prints no flags (and fails): nothing to misread', () => {
    const result = spawnSync('stty', ['-a'], { stdio: ['pipe', 'pipe', 'pipe'], encoding: 'utf8' })
    expect(result.status).not.toBe(0)
    expect(parseSttyModes(result.stdout)).toBeUndefined()
  })
})
