/** What one line really did, read from strace. */
export interface LineTrace {
  /** The line's bash was seen starting (false: the driver never reached it). */
  started: boolean
  /** Programs executed successfully after the line's bash started (not that bash itself). */
  execs: { path: string; argv: string[] }[]
  /** Calls that write, create, remove or change a file, as `call path`, or change the machine (clock, mounts…); attempts count, failed or not. */
  writes: string[]
  /** connect() calls to anything but a Unix socket. */
  connects: string[]
}

interface Event {
  call: string
  args: string
  result: string
}

const WRITE_FLAGS = /O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND|O_TMPFILE/
const CHANGES = new Set([
  'creat', 'rename', 'renameat', 'renameat2', 'unlink', 'unlinkat', 'rmdir', 'mkdir', 'mkdirat', 'link', 'linkat', 'symlink',
  'symlinkat', 'truncate', 'chmod', 'fchmodat', 'chown', 'fchownat', 'lchown', 'mknod', 'mknodat', 'utimensat', 'utimes',
])
const SYSTEM = new Set([
  'clock_settime', 'settimeofday', 'clock_adjtime', 'adjtimex', 'sethostname', 'setdomainname', 'mount', 'umount2', 'reboot',
  'swapon', 'swapoff', 'init_module', 'finit_module', 'delete_module', 'kexec_load',
])
/** Writing here changes nothing: the bit bucket, the terminal, the standard streams. */
const HARMLESS_WRITE = /^(\/dev\/(null|tty|stdout|stderr|fd\/\d+)|\/proc\/self\/fd\/\d+)$/

/** Splits an `strace -f -o` file into the lines run by the driver (`bash -c LINE oracle-<n>`). */
export function parseTrace(text: string, count: number): LineTrace[] {
  const traces: LineTrace[] = Array.from({ length: count }, () => ({ started: false, execs: [], writes: [], connects: [] }))
  const pending = new Map<number, string>()
  const lineOf = new Map<number, number>()
  const parentOf = new Map<number, number>()
  const events: [pid: number, event: Event][] = []
  for (const raw of text.split('\n')) {
    const match = /^(\d+)\s+(.*)$/.exec(raw)
    if (!match) continue
    const pid = Number(match[1])
    let rest = match[2]
    if (rest.endsWith('<unfinished ...>')) {
      pending.set(pid, rest.slice(0, -'<unfinished ...>'.length))
      continue
    }
    const resumed = /^<\.\.\. \w+ resumed>(.*)$/.exec(rest)
    if (resumed) {
      rest = (pending.get(pid) ?? '') + resumed[1]
      pending.delete(pid)
    }
    const call = /^(\w+)\((.*)\)\s+=\s+(.*)$/s.exec(rest)
    if (!call) continue
    const event = { call: call[1], args: call[2], result: call[3] }
    // A child's first calls can be printed before its parent's clone returns: map parents first.
    if (/^(clone3?|v?fork)$/.test(event.call) && /^\d+/.test(event.result)) parentOf.set(Number(/^\d+/.exec(event.result)![0]), pid)
    events.push([pid, event])
  }
  const lineOfPid = (pid: number): number | undefined => {
    for (let p: number | undefined = pid, hops = 0; p !== undefined && hops < 10_000; p = parentOf.get(p), hops++) {
      const line = lineOf.get(p)
      if (line !== undefined) return line
    }
    return undefined
  }
  for (const [pid, event] of events) {
    if (event.call === 'execve' || event.call === 'execveat') {
      const strings = quotedStrings(event.args)
      const argv = arrayStrings(event.args)
      // The driver runs `/usr/bin/bash --noprofile --norc -c LINE oracle-<n>`.
      const marker = argv.length === 6 && argv[3] === '-c' ? /^oracle-(\d+)$/.exec(argv[5]) : null
      if (marker && event.result.startsWith('0') && strings[0] === '/usr/bin/bash' && lineOf.get(pid) === undefined && lineOfPid(pid) === undefined) {
        lineOf.set(pid, Number(marker[1]))
        traces[Number(marker[1])].started = true
        continue
      }
    }
    const line = lineOfPid(pid)
    if (line === undefined || !traces[line]) continue
    const trace = traces[line]
    if (event.call === 'execve' || event.call === 'execveat') {
      if (event.result.startsWith('0')) trace.execs.push({ path: quotedStrings(event.args)[0] ?? '?', argv: arrayStrings(event.args) })
    } else if (event.call === 'open' || event.call === 'openat' || event.call === 'openat2') {
      const path = quotedStrings(event.args)[0] ?? '?'
      if (WRITE_FLAGS.test(event.args) && !HARMLESS_WRITE.test(path)) trace.writes.push(`${event.call} ${path}`)
    } else if (CHANGES.has(event.call)) {
      const path = quotedStrings(event.args)[0] ?? '(fd)'
      if (!HARMLESS_WRITE.test(path)) trace.writes.push(`${event.call} ${path}`)
    } else if (SYSTEM.has(event.call)) {
      trace.writes.push(`${event.call}(${event.args.slice(0, 100)})`)
    } else if (event.call === 'connect' && !/sa_family=AF_UNIX/.test(event.args)) {
      trace.connects.push(event.args.slice(0, 200))
    }
  }
  return traces
}

/** The C-style string literals of an argument list, unescaped. */
function quotedStrings(args: string): string[] {
  const out: string[] = []
  const re = /"((?:\\.|[^"\\])*)"/g
  for (let m = re.exec(args); m; m = re.exec(args)) out.push(unescape(m[1]))
  return out
}

/** The strings inside the first `[…]` (execve's argv). */
function arrayStrings(args: string): string[] {
  // Skip the path string first: it may hold a `[`.
  const afterPath = args.replace(/^[^"]*"(?:\\.|[^"\\])*"/, '')
  const open = afterPath.indexOf('[')
  if (open < 0) return []
  const out: string[] = []
  const re = /\s*"((?:\\.|[^"\\])*)"(?:\.\.\.)?\s*(,|\])/y
  re.lastIndex = open + 1
  for (let m = re.exec(afterPath); m; m = re.exec(afterPath)) {
    out.push(unescape(m[1]))
    if (m[2] === ']') break
  }
  return out
}

function unescape(text: string): string {
  return text.replace(/\\(x[0-9a-fA-F]{2}|[0-7]{1,3}|.)/g, (_all, code: string) => {
    if (code[0] === 'x') return String.fromCharCode(parseInt(code.slice(1), 16))
    if (/^[0-7]/.test(code)) return String.fromCharCode(parseInt(code, 8))
    return ({ n: '\n', t: '\t', r: '\r', v: '\v', f: '\f', a: '\x07', b: '\b', e: '\x1b' } as Record<string, string>)[code] ?? code
  })
}
