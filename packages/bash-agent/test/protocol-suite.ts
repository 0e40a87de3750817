/**
 * The agent's own suite, frame by frame, with real processes: one definition run against every
 * transport (a local pipe here; a Docker exec, a pods/exec through the fake API server and an SSH
 * exec channel in the transports' packages). The processes are looked at from this machine's /proc:
 * every transport tested here runs them on this kernel (containers' pid namespaces are children of
 * ours), found by a tag in their command lines.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { finished } from 'node:stream/promises'
import { DEFAULT_SECRET_PATTERNS } from '@deepseek-ai/dsh-bash'
import { afterEach, describe, expect, it } from 'vitest'
import { type AgentStream, encodeFrame, FrameReader } from '../src/index.js'

/**
 * The secret rules every transport passes to `serve` (after the shell): the kit's list, as the
 * executors pass it, and one `!NAME` kept.
 */
export const SUITE_SECRET_RULES: readonly string[] = [...DEFAULT_SECRET_PATTERNS, '!DSH_PROBE_KEPT_TOKEN']

/** How a transport starts agents for the suite. */
export interface AgentTransport {
  /**
   * Starts a serving agent (`serve <shell> ...SUITE_SECRET_RULES`, shell default `bash`) with
   * `env` added to its environment where the transport can (locally; elsewhere it is ignored and
   * the test says which); resolves with its streams.
   */
  start(options?: { env?: Record<string, string>; shell?: string }): Promise<AgentStream>
  /** True when `start` can add variables to the agent's environment. */
  env: boolean
  /** A directory the far side's user may work in (a far-side path). */
  workdir: string
  /** Runs the agent's `kill` mode on the far side; resolves with what it printed. Undefined: not offered. */
  kill?(marker: string, pid: number, start: number): Promise<string>
  /** Makes the far side's next new process get `pid` (ns_last_pid); undefined: cannot. */
  choosePid?(pid: number): void
  /** The far side's pid of a process this machine sees as `hostPid` (they differ in a container). */
  farPid(hostPid: number): number
}

export interface Frame {
  op: string
  id: string
  payload: Buffer
  text: string
}

let clientSeq = 0

/** A raw client: frames out, frames in, kept per command id. */
export class FrameClient {
  /**
   * Markers are unique per client: every agent on this machine reads the whole /proc, so two
   * suites running at once with the same marker would count and kill each other's processes.
   */
  private readonly markerPrefix = `m${process.pid}x${++clientSeq}x${Date.now() % 1e6}`
  readonly frames: Frame[] = []
  private listeners: Array<() => void> = []
  closed = false
  stderr = ''

  constructor(readonly stream: AgentStream) {
    const reader = new FrameReader(
      (op, id, payload) => {
        this.frames.push({ op, id, payload, text: payload.toString('utf8') })
        for (const listener of this.listeners.splice(0)) listener()
      },
      (data) => {
        this.frames.push({ op: '!broken', id: '', payload: data, text: data.toString('utf8') })
      },
      64 * 1024,
    )
    stream.stdout.on('data', (chunk: Buffer) => reader.push(chunk))
    stream.stderr.on('data', (chunk: Buffer) => (this.stderr += chunk.toString('utf8')))
    void Promise.all([stream.closed, finished(stream.stdout).catch(() => undefined)]).then(() => {
      this.closed = true
      for (const listener of this.listeners.splice(0)) listener()
    })
  }

  send(op: string, id: string, payload: Buffer | string = ''): void {
    this.stream.stdin.write(encodeFrame(op, id, payload))
  }

  run(id: string, command: string, options: { workdir?: string; mode?: string; env?: Record<string, string>; marker?: string } = {}): void {
    const pairs = Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${v}`)
    this.send('run', id, [options.workdir ?? '/', options.marker ?? `${this.markerPrefix}-${id}`, options.mode ?? 'none', String(pairs.length), ...pairs, command].join('\0'))
  }

  /** The first frame (after `from`) matching; waits for it. */
  async next(op: string, id: string, timeoutMs = 20_000, from = 0): Promise<Frame> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const found = this.frames.slice(from).find((f) => f.op === op && f.id === id)
      if (found) return found
      if (this.closed) throw new Error(`agent closed before ${op} ${id}; stderr: ${this.stderr}; frames: ${this.describe()}`)
      if (Date.now() > deadline) throw new Error(`no ${op} ${id} in ${timeoutMs} ms; frames: ${this.describe()}`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, deadline - Date.now()))
        this.listeners.push(() => {
          clearTimeout(timer)
          resolve()
        })
      })
    }
  }

  /** All `out` (or `err`) bytes of a command so far. */
  output(id: string, op: 'out' | 'err' = 'out'): string {
    return this.frames
      .filter((f) => f.op === op && f.id === id)
      .map((f) => f.text)
      .join('')
  }

  /** Waits until the command's output contains `text`. */
  async outputContaining(id: string, text: string, timeoutMs = 20_000): Promise<string> {
    const deadline = Date.now() + timeoutMs
    while (!this.output(id).includes(text)) {
      if (Date.now() > deadline || this.closed) throw new Error(`no ${JSON.stringify(text)} in the output of ${id}: ${JSON.stringify(this.output(id))}`)
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    return this.output(id)
  }

  describe(): string {
    return this.frames.map((f) => `${f.op} ${f.id} ${JSON.stringify(f.text.slice(0, 60))}`).join('; ')
  }
}

/** Live processes (zombies excluded) on this machine whose command line contains `tag`. */
export function processesWith(tag: string): number[] {
  const found: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8')
      if (!cmdline.includes(tag)) continue
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
      if (state !== 'Z' && state !== 'X') found.push(Number(name))
    } catch {
      // Gone meanwhile.
    }
  }
  return found
}

async function until(check: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

let tagSeq = 0
/** A tag for command lines, split by an empty quote so that only the started processes carry it. */
function tagged(): { tag: string; q: string } {
  const tag = `${process.pid}${Date.now() % 100000}${++tagSeq}`
  return { tag, q: `${tag.slice(0, 3)}''${tag.slice(3)}` }
}

export function agentProtocolSuite(name: string, transport: () => AgentTransport): void {
  describe(`agent protocol over ${name}`, () => {
    const clients: FrameClient[] = []
    afterEach(async () => {
      // Through the lifeline (stdin ends: the agent kills what its commands left), then for sure.
      for (const client of clients.splice(0)) {
        client.stream.stdin.end()
        const timer = setTimeout(() => client.stream.destroy(), 30_000)
        await client.stream.closed
        clearTimeout(timer)
      }
    })
    async function open(options?: { env?: Record<string, string>; shell?: string }): Promise<FrameClient> {
      const client = new FrameClient(await transport().start(options))
      clients.push(client)
      await client.next('hello', '0')
      return client
    }
    const wd = () => transport().workdir

    it('says hello with its name and protocol version first', async () => {
      const client = await open()
      expect(client.frames[0].op).toBe('hello')
      expect(client.frames[0].text).toMatch(/^dsh-bash-agent 1 [0-9a-f]{64}( \w+)*$/)
    })

    it('runs bash in a new session with fds 0-2 only, the marker, no secrets, stdin /dev/null; two streams and the exit status', async () => {
      const probe = transport().env
      const client = await open({ env: { DSH_PROBE_API_TOKEN: 'hunter2', DSH_PROBE_PLAIN: 'visible', BASH_ENV: '/nonexistent' } })
      client.run('1', 'read -r st </proc/$$/stat; set -- ${st##*) }; echo "$$ $3 $4"; echo "$DSH_BASH_TASK ${DSH_PROBE_API_TOKEN-dropped} $DSH_PROBE_PLAIN ${BASH_ENV-unset} $X"; readlink /proc/$$/fd/0; echo oops >&2; exit 7', {
        workdir: wd(),
        marker: 'the-marker',
        env: { X: "it's" },
      })
      const ok = await client.next('ok', '1')
      const exit = await client.next('exit', '1')
      await client.next('eof1', '1')
      await client.next('eof2', '1')
      expect(exit.text).toBe('c 7 0')
      const [ids, vars, stdin] = client.output('1').split('\n')
      const [pid, pgid, sid] = ids.split(' ')
      expect([pgid, sid]).toEqual([pid, pid])
      expect(ok.text.split(' ')[0]).toBe(pid)
      expect(ok.text.split(' ')[1]).toMatch(/^\d+$/)
      // The descriptors of a command, seen from here (a listing from inside would see its own).
      const { tag, q } = tagged()
      client.run('2', `exec sleep 100${q}`, { workdir: wd() })
      // Wait for sleep itself: bash -c shows the same tag in its command line before it execs, and
      // may hold a startup file open at that moment (CI saw fd 3 once, native).
      const sleeper = () => processesWith(`100${tag}`).filter((pid) => {
        try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('sleep\0') } catch { return false }
      })
      await until(() => sleeper().length === 1, 'the sleeper')
      // sleep itself opens files while it starts (the locale archive; CI saw fd 3 under qemu once):
      // a descriptor the agent leaked stays for good, one of those goes within moments.
      const fds = () => readdirSync(`/proc/${sleeper()[0]}/fd`).sort()
      await until(() => fds().length === 3, 'the sleeper to hold fds 0-2 only', 3_000).catch(() => undefined)
      expect(fds()).toEqual(['0', '1', '2'])
      client.send('term', '2', '0')
      await client.next('termed', '2')
      expect(vars).toBe(probe ? "the-marker dropped visible unset it's" : "the-marker dropped  unset it's")
      expect(stdin).toBe('/dev/null')
      expect(client.output('1', 'err')).toBe('oops\n')
    })

    it('drops secrets by the kit\'s rules: whole-name globs, case-insensitive; !NAME keeps that exact name', async ({ skip }) => {
      if (!transport().env) skip()
      const env = {
        DSH_PROBE_API_TOKEN: 'a',
        dsh_probe_lower_token: 'b',
        DSH_PROBE_PASSWORDS_X: 'c',
        TOKEN: 'd',
        DSH_PROBE_KEPT_TOKEN: 'e',
        dsh_probe_kept_token: 'f',
        DSH_PROBE_MONKEY: 'g',
        TOKENIZERS_PARALLELISM: 'h',
        DSH_PROBE_TOKENS: 'i',
        DSH_PROBE_KEY_X: 'j',
      }
      const client = await open({ env })
      const names = Object.keys(env)
      client.run('1', names.map((n) => `echo "${n}=\${${n}-dropped}"`).join('; '), { workdir: wd() })
      await client.next('exit', '1')
      await client.next('eof1', '1')
      expect(client.output('1')).toBe(
        [
          'DSH_PROBE_API_TOKEN=dropped',
          'dsh_probe_lower_token=dropped',
          'DSH_PROBE_PASSWORDS_X=dropped',
          'TOKEN=dropped',
          'DSH_PROBE_KEPT_TOKEN=e',
          'dsh_probe_kept_token=dropped',
          'DSH_PROBE_MONKEY=g',
          'TOKENIZERS_PARALLELISM=h',
          'DSH_PROBE_TOKENS=i',
          'DSH_PROBE_KEY_X=j',
          '',
        ].join('\n'),
      )
    })

    it('a signal is reported as such; a missing workdir, a file as workdir and a missing shell fail the start', async () => {
      const client = await open()
      client.run('1', 'kill -TERM $$', { workdir: wd() })
      expect((await client.next('exit', '1')).text).toBe('s 15 0')
      client.run('2', 'true', { workdir: '/no/such/dir' })
      expect((await client.next('fail', '2')).text).toBe('nowd')
      client.run('3', 'true', { workdir: '/proc/self/stat' })
      expect((await client.next('fail', '3')).text).toBe('notdir')
      const other = await open({ shell: '/no/such/shell' })
      other.run('1', 'true', { workdir: wd() })
      expect((await other.next('fail', '1')).text).toBe('spawn:cannot run /no/such/shell: No such file or directory')
    })

    it('stdin through in/eof frames; a command longer than one argument runs from a private file that is gone after', async () => {
      const client = await open()
      client.run('1', 'cat; echo end', { workdir: wd(), mode: 'pipe' })
      client.send('in', '1', 'hello ')
      client.send('in', '1', 'stdin\n')
      client.send('eof', '1')
      await client.next('exit', '1')
      expect(client.output('1')).toBe('hello stdin\nend\n')
      const payload = 'x'.repeat(300 * 1024)
      client.run('2', `s='${payload}'\nprintf '%s' "$s" | wc -c\necho "$0"`, { workdir: wd() })
      await client.next('exit', '2')
      const [count, file] = client.output('2').split('\n')
      expect(count).toBe(String(payload.length))
      client.run('3', `test -e '${file}' && echo present || echo gone`, { workdir: wd() })
      await client.next('exit', '3')
      expect(client.output('3')).toBe('gone\n')
    })

    it('the exit comes when the main process ends though a grandchild holds the pipes; leftovers counted; term kills group, setsid and nohup escapees', async () => {
      const client = await open()
      const { tag, q } = tagged()
      client.run('1', `sleep 100${q} & setsid sleep 100${q} & nohup sleep 100${q} >/dev/null 2>&1 & echo started`, { workdir: wd() })
      const exit = await client.next('exit', '1')
      expect(exit.text).toBe('c 0 3')
      // (Looked at from here, one may still be inside its exec for a moment: its arguments read empty.)
      await until(() => processesWith(`100${tag}`).length === 3, 'the three sleepers')
      client.send('count', '1')
      expect((await client.next('count', '1')).text).toBe('3')
      client.send('term', '1', '300')
      await client.next('termed', '1')
      expect(processesWith(`100${tag}`)).toEqual([])
      // The pipes close with the last holder.
      await client.next('eof1', '1')
    })

    it('a tree that keeps forking and ignores TERM is frozen and killed after the grace', async () => {
      const client = await open()
      const { tag, q } = tagged()
      client.run('1', `trap '' TERM; for i in 1 2 3; do (trap '' TERM; while :; do sleep 0.0\${i}${q}; done) & done; setsid bash -c "trap '' TERM; while :; do sleep 0.05${q}; done" & wait`, { workdir: wd() })
      await client.next('ok', '1')
      await until(() => processesWith(tag).length >= 4, 'the loops')
      client.send('term', '1', '200')
      await client.next('termed', '1')
      await client.next('exit', '1')
      expect(processesWith(tag)).toEqual([])
    })

    it('a client that stops reading stalls the output, never a kill', async () => {
      const client = await open()
      const { tag, q } = tagged()
      client.run('1', `exec yes flood${q}`, { workdir: wd() })
      await client.next('ok', '1')
      await until(() => processesWith(`flood${tag}`).length === 1, 'the flood')
      client.stream.stdout.pause()
      // Long enough for every pipe and buffer between here and the agent to fill.
      await new Promise((resolve) => setTimeout(resolve, 1_500))
      client.send('term', '1', '100')
      await until(() => processesWith(`flood${tag}`).length === 0, 'the flood killed while nobody reads')
      client.stream.stdout.resume()
      await client.next('termed', '1', 60_000)
    })

    it('wait answers `empty` once the last process ends, and reports what it still sees meanwhile', async () => {
      const client = await open()
      const { tag, q } = tagged()
      client.run('1', `setsid sleep 1.5${q} & sleep 1000${q} & echo $!`, { workdir: wd() })
      await client.next('exit', '1')
      client.send('wait', '1', '200')
      const still = await client.next('still', '1')
      const entries = still.text.split(' ')
      expect(entries.map((e) => e.split(':')[1]).sort()).toEqual(['group', 'marker'])
      expect(entries.every((e) => /^\d+:\w+:[A-Z]:sleep$/.test(e))).toBe(true)
      // The group member ends; the marked escapee ends by itself after 1.5 s.
      const member = Number(client.output('1').trim())
      const hostMember = processesWith(`1000${tag}`)[0]
      expect(transport().farPid(hostMember)).toBe(member)
      process.kill(hostMember, 'SIGKILL')
      await client.next('empty', '1')
      expect(processesWith(tag)).toEqual([])
    })

    it('an interactive command gets a terminal: its controlling tty, the size, resize, input, and its modes', async () => {
      const client = await open()
      client.run('1', 'tty >/dev/null && echo tty-ok; stty size; read -r line; echo "got $line"; stty size; read -rs secret; echo "secret ${#secret}"; exit 3', { workdir: wd(), mode: 'pty,100,30' })
      await client.outputContaining('1', '30 100')
      client.send('modes', '1')
      expect((await client.next('modes', '1')).text).toBe('echo icanon')
      client.send('size', '1', '90 20')
      client.send('in', '1', 'hello\r')
      await client.outputContaining('1', '20 90')
      // `read -s` turns echo off while it waits (line mode stays).
      for (let i = 0; ; i++) {
        const before = client.frames.length
        client.send('modes', '1')
        const answer = await client.next('modes', '1', 20_000, before)
        if (answer.text === '-echo icanon') break
        if (i > 200) throw new Error('echo never went off under read -s')
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      client.send('in', '1', 'hunter2\r')
      expect((await client.next('exit', '1')).text).toMatch(/^c 3 /)
      await client.outputContaining('1', 'secret 7')
      expect(client.output('1')).toContain('tty-ok')
      expect(client.output('1')).toContain('got hello')
      // `read -e` (readline) puts the terminal in raw mode, without echo (it echoes itself), while it reads.
      client.run('3', "read -e -p 'Line: ' x; echo \"[$x]\"", { workdir: wd(), mode: 'pty,80,24' })
      await client.outputContaining('3', 'Line: ')
      for (let i = 0; ; i++) {
        const before = client.frames.length
        client.send('modes', '3')
        if ((await client.next('modes', '3', 20_000, before)).text === '-echo -icanon') break
        if (i > 200) throw new Error('read -e never made the terminal raw')
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      client.send('in', '3', 'typed\r')
      await client.outputContaining('3', '[typed]')
      expect(client.output('1')).not.toContain('hunter2')
      expect(client.frames.some((f) => f.op === 'err' && f.id === '1')).toBe(false)
      client.run('2', 'true', { workdir: wd() })
      await client.next('exit', '2')
      client.send('modes', '2')
      expect((await client.next('modes', '2')).text).toBe('')
    })

    it('when its stdin ends (the near side is gone) it kills every command, escapees included, and exits', async () => {
      const client = await open()
      const { tag, q } = tagged()
      client.run('1', `setsid sleep 100${q} & sleep 100${q}`, { workdir: wd() })
      client.run('2', `sleep 100${q}`, { workdir: wd(), mode: 'pty,80,24' })
      await until(() => processesWith(tag).length === 3, 'the sleepers')
      client.stream.stdin.end()
      await client.stream.closed
      await until(() => processesWith(tag).length === 0, 'no sleeper left')
    })

    it('sweep kills by marker what an earlier agent left; ids of unknown commands are answered at once; bad frames are refused', async () => {
      const first = await open()
      const { tag, q } = tagged()
      first.run('1', `setsid sleep 100${q} & echo started`, { workdir: wd(), marker: `lost-${tag}` })
      await first.next('exit', '1')
      // Gone without its lifeline firing for this one: its processes are left behind.
      first.send('forget', '1')
      await until(() => processesWith(tag).length === 1, 'the escapee')
      const client = await open()
      client.send('sweep', '9', `lost-${tag} 100`)
      await client.next('termed', '9')
      expect(processesWith(tag)).toEqual([])
      client.send('count', '77')
      expect((await client.next('count', '77')).text).toBe('0')
      client.send('wait', '77')
      await client.next('empty', '77')
      client.send('frobnicate', '78')
      expect((await client.next('error', '78')).text).toBe('unknown op')
      client.stream.stdin.write('this is not a frame header\n')
      expect((await client.next('error', '0')).text).toMatch(/malformed frame header/)
      await client.stream.closed
    })

    it('the second-channel kill matches the group only while its leader is there', async (test) => {
      const t = transport()
      if (!t.kill) return test.skip()
      const client = await open()
      const { tag, q } = tagged()
      // A member that dropped its marker and left its parent (double fork), under a leader that is
      // alive: found through the group only. (`sleep 100<tag>s`: the suffix is sleep's unit.)
      const member = (n: string) => `(env -u DSH_BASH_TASK sleep 100${q}${n} &); sleep 100${q}m`
      client.run('1', member('s'), { workdir: wd(), marker: `k1-${tag}` })
      const [pid, start] = (await client.next('ok', '1')).text.split(' ').map(Number)
      await until(() => processesWith(`${tag}s`).length === 1 && processesWith(`${tag}m`).length === 1, 'the member and the marked sleeper')
      expect(await t.kill(`k1-${tag}`, pid, start)).toBe('2')
      expect(processesWith(tag)).toEqual([])
      await client.next('exit', '1')
      // A wrong start time: the group is not the command's; only the marker (and children) count.
      client.run('2', member('h'), { workdir: wd(), marker: `k2-${tag}` })
      const [pid2, start2] = (await client.next('ok', '2')).text.split(' ').map(Number)
      await until(() => processesWith(`${tag}h`).length === 1 && processesWith(`${tag}m`).length === 1, 'the member and the marked sleeper')
      expect(await t.kill(`k2-${tag}`, pid2, start2 + 1)).toBe('1')
      expect(processesWith(`${tag}h`)).toHaveLength(1)
      // The serving agent still holds the group (orphaned: its member lives): its kill finds it.
      client.send('term', '2', '100')
      await client.next('termed', '2')
      expect(processesWith(tag)).toEqual([])
    })

    // Up to 5 rounds of 20 tries for a freed number: minutes under qemu-user on a saturated machine.
    it('a group number taken by a stranger after the group ended is never counted nor killed', { timeout: 240_000 }, async (test) => {
      const t = transport()
      if (!t.choosePid) return test.skip()
      const client = await open()
      const { tag, q } = tagged()
      // A busy machine may give the freed number to another fork first: a new round, a new number.
      let stranger = ''
      for (let round = 1; !stranger; round++) {
        if (round > 5) throw new Error('no stranger got a freed group number in 5 rounds')
        if (round > 1) {
          const before = client.frames.length
          client.send('term', '1', '0')
          await client.next('termed', '1', 20_000, before)
          client.send('forget', '1')
        }
        const start = client.frames.length
        client.run('1', `echo $$; setsid sleep 100${q}1 </dev/null >/dev/null 2>&1 & exit 0`, { workdir: wd() })
        await client.next('exit', '1', 20_000, start)
        const leader = Number(client.frames.slice(start).find((f) => f.op === 'out' && f.id === '1')!.text.trim())
        await until(() => processesWith(`${tag}1`).length === 1, 'the escapee')
        // The stranger: a new session with the leader's pid and without the marker.
        for (let attempt = 0; attempt < 20 && !stranger; attempt++) {
          t.choosePid!(leader)
          const id = `s${round}-${attempt}`
          client.run(id, `echo $$; exec sleep 100${q}2`, { workdir: wd(), marker: `other-${tag}` })
          await client.outputContaining(id, '\n')
          if (Number(client.output(id).trim()) === leader) stranger = id
          else {
            client.send('term', id, '0')
            await client.next('termed', id)
          }
        }
      }
      // Answers after these requests only: id 1 was used by every round.
      let before = client.frames.length
      client.send('count', '1')
      expect((await client.next('count', '1', 20_000, before)).text).toBe('1')
      before = client.frames.length
      client.send('term', '1', '100')
      await client.next('termed', '1', 20_000, before)
      expect(processesWith(`${tag}1`)).toEqual([])
      expect(processesWith(`${tag}2`)).toHaveLength(1)
      client.send('term', stranger, '100')
      await client.next('termed', stranger)
      expect(processesWith(tag)).toEqual([])
    })
  })
}
