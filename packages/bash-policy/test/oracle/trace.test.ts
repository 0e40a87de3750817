import { describe, expect, it } from 'vitest'
import { parseTrace } from './trace.js'
import { violations } from './judge.js'

const marker = (pid: number, n: number, line = 'ls') =>
  `${pid}  execve("/usr/bin/bash", ["/usr/bin/bash", "--noprofile", "--norc", "-c", ${JSON.stringify(line)}, "oracle-${n}"], 0x7ffd /* 9 vars */) = 0`

describe('the strace reader of the oracle', () => {
  it('splits the trace by line, following children cloned before and after their parent returns', () => {
    const text = [
      '10  execve("/usr/bin/timeout", ["timeout", "-s", "KILL", "5", "/usr/bin/bash"], 0x1 /* 9 vars */) = 0',
      '10  openat(AT_FDCWD, "/tmp/driver-junk", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3',
      '10  clone(child_stack=NULL, flags=SIGCHLD <unfinished ...>',
      marker(11, 0),
      '11  clone(child_stack=NULL, flags=SIGCHLD) = 12',
      '12  execve("/usr/bin/touch", ["ls", "m"], 0x2 /* 9 vars */) = 0',
      '12  openat(AT_FDCWD, "m", O_WRONLY|O_CREAT|O_NOCTTY|O_NONBLOCK, 0666) = 3',
      '10  <... clone resumed>) = 11',
      marker(20, 1, 'echo hi >/dev/null'),
      '20  openat(AT_FDCWD, "/dev/null", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3',
      '20  connect(3, {sa_family=AF_UNIX, sun_path="/var/run/nscd/socket"}, 110) = -1 ENOENT (No such file or directory)',
      '20  execve("/usr/bin/ls", ["ls"], 0x3 /* 9 vars */) = -1 ENOENT (No such file or directory)',
      '20  connect(4, {sa_family=AF_INET, sin_port=htons(9), sin_addr=inet_addr("127.0.0.1")}, 16 <unfinished ...>',
      '20  <... connect resumed>) = -1 ECONNREFUSED (Connection refused)',
      '20  clock_settime(CLOCK_REALTIME, {tv_sec=1577836800, tv_nsec=0}) = -1 EPERM (Operation not permitted)',
    ].join('\n')
    const [first, second, third] = parseTrace(text, 3)
    expect(first).toEqual({ started: true, execs: [{ path: '/usr/bin/touch', argv: ['ls', 'm'] }], writes: ['openat m'], connects: [] })
    expect(second.started).toBe(true)
    expect(second.execs).toEqual([])
    expect(second.writes).toEqual(['clock_settime(CLOCK_REALTIME, {tv_sec=1577836800, tv_nsec=0})'])
    expect(second.connects).toHaveLength(1)
    expect(third).toEqual({ started: false, execs: [], writes: [], connects: [] })
    expect(violations(first)).toEqual(['executed /usr/bin/touch m', 'wrote: openat m'])
  })

  it('does not let a line name itself as another line', () => {
    const text = [marker(30, 0, 'bash -c ls oracle-1'), '31  execve("/usr/bin/bash", ["/usr/bin/bash", "--noprofile", "--norc", "-c", "touch m", "oracle-1"], 0x1 /* 1 var */) = 0', '30  clone(child_stack=NULL, flags=SIGCHLD) = 31'].join('\n')
    const [first, second] = parseTrace(text, 2)
    expect(second.started).toBe(false)
    expect(first.execs).toEqual([{ path: '/usr/bin/bash', argv: ['/usr/bin/bash', '--noprofile', '--norc', '-c', 'touch m', 'oracle-1'] }])
  })

  it('reads escaped strings and programs from outside the system directories', () => {
    const text = [marker(40, 0), '40  execve("/tmp/w/0/evilbin/ls", ["ls", "a\\"b\\n\\x41"], 0x1 /* 1 var */) = 0'].join('\n')
    const [trace] = parseTrace(text, 1)
    expect(trace.execs).toEqual([{ path: '/tmp/w/0/evilbin/ls', argv: ['ls', 'a"b\nA'] }])
    expect(violations(trace)).toEqual(['executed /tmp/w/0/evilbin/ls from outside the system directories'])
  })
})
