/**
 * Test fixture: real OpenSSH servers on 127.0.0.1 at free ports, a dedicated non-root user, and
 * temporary keys. Requires root (to create the user and run sshd) and /usr/sbin/sshd
 * (Debian: `apt-get install -y openssh-server`).
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer, Socket } from 'node:net'
import { join } from 'node:path'

export const SSHD = '/usr/sbin/sshd'
export const TEST_USER = 'dshtest'

/** Why the SSH tests cannot run here, or undefined when they can. */
export function unavailableReason(): string | undefined {
  if (!existsSync(SSHD)) return `${SSHD} is missing (install the openssh-server package)`
  if (process.getuid?.() !== 0) return 'the SSH tests must run as root (they create a user and start sshd)'
  if (spawnSync('ssh-keygen', ['-?'], { stdio: 'ignore' }).error) return 'ssh-keygen is missing (install openssh-client)'
  if (spawnSync('useradd', ['--help'], { stdio: 'ignore' }).error) return 'useradd is missing'
  return undefined
}

/** Creates the test user when missing (login shell bash, not locked, home directory). */
export function ensureUser(name = TEST_USER): { uid: number; gid: number } {
  for (let attempt = 0; ; attempt++) {
    const id = spawnSync('id', ['-u', name], { encoding: 'utf8' })
    if (id.status === 0) break
    // Another test process may be creating it at the same time (passwd lock): retry.
    const made = spawnSync('useradd', ['-m', '-s', '/bin/bash', '-p', '*', name], { encoding: 'utf8' })
    if (made.status === 0 || attempt > 20) break
    execFileSync('sleep', ['0.2'])
  }
  // OpenSSH refuses a locked account ("!" password) when PAM is off; "*" is "no password", not locked.
  const shadow = spawnSync('getent', ['shadow', name], { encoding: 'utf8' }).stdout ?? ''
  if (shadow.split(':')[1]?.startsWith('!')) spawnSync('usermod', ['-p', '*', name])
  const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }).trim())
  const gid = Number(execFileSync('id', ['-g', name], { encoding: 'utf8' }).trim())
  return { uid, gid }
}

/** A free TCP port on 127.0.0.1 (closed again; sshd binds it right after). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))))
    })
  })
}

/** Keys for one test file: a user key pair and the directory they live in. */
export interface TestKeys {
  /** The remote user. */
  user: string
  dir: string
  userKeyPath: string
  authorizedKeysPath: string
  /** A workdir owned by the test user (physical path). */
  workdir: string
  remove(): void
}

export function makeKeys(user = TEST_USER): TestKeys {
  const { uid, gid } = ensureUser(user)
  const dir = realpathSync(mkdtempSync('/tmp/dsh-bash-ssh-test-'))
  // sshd reads authorized_keys as the user: the directory must be traversable by it.
  chmodSync(dir, 0o755)
  const userKeyPath = join(dir, 'user_key')
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'dsh-bash-ssh-test', '-f', userKeyPath])
  const authorizedKeysPath = join(dir, 'authorized_keys')
  writeFileSync(authorizedKeysPath, readFileSync(`${userKeyPath}.pub`), { mode: 0o644 })
  chmodSync(authorizedKeysPath, 0o644)
  const workdir = join(dir, 'work')
  mkdirSync(workdir)
  execFileSync('chown', [`${uid}:${gid}`, workdir])
  return { user, dir, userKeyPath, authorizedKeysPath, workdir, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

export interface SshdInstance {
  port: number
  hostKeyPath: string
  /** `ssh-ed25519 AAAA…` of the host key. */
  hostPublicKey: string
  /** `SHA256:…` of the host key. */
  fingerprint: string
  /** A known_hosts file naming this server (`[127.0.0.1]:port`). */
  knownHostsPath: string
  /** Stops the server and every session process it spawned (SIGKILL: the peer sees a dead server). */
  kill(): Promise<void>
  /** SIGSTOPs the server and its session processes: connections stay open but nothing answers. */
  freeze(): void
  /** SIGCONTs what `freeze` stopped. */
  thaw(): void
  /** Starts it again on the same port with the same host key. */
  restart(): Promise<void>
  /** Stops it for good (and removes its files). */
  stop(): Promise<void>
}

/** ` DSH_BASH_TEST_RUN=<id>` when the suite runs under vitest.leaks.ts, else nothing. */
function runId(): string {
  const run = process.env.DSH_BASH_TEST_RUN
  return run && /^[\w-]+$/.test(run) ? ` DSH_BASH_TEST_RUN=${run}` : ''
}

/**
 * A directory of links to everything in /usr/bin except Perl (`perl*`) and procps (`ps`, `pgrep`,
 * `pkill`, …): the test user's PATH on every test sshd. Made once per key directory.
 */
export function pathWithout(keys: TestKeys): string {
  const bin = join(keys.dir, 'bin')
  if (existsSync(bin)) return bin
  mkdirSync(bin, { mode: 0o755 })
  const procps = new Set(spawnSync('dpkg', ['-L', 'procps'], { encoding: 'utf8' }).stdout.split('\n').map((path) => path.split('/').pop()!).filter(Boolean))
  for (const name of readdirSync('/usr/bin')) {
    if (name.startsWith('perl') || procps.has(name)) continue
    symlinkSync(join('/usr/bin', name), join(bin, name))
  }
  return bin
}

/** Starts `/usr/sbin/sshd -D -e -f <config>` on 127.0.0.1 at a free port. */
export async function startSshd(keys: TestKeys, name: string, options: { maxSessions?: number; setEnv?: string; extraConfig?: readonly string[] } = {}): Promise<SshdInstance> {
  const user = keys.user
  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 })
  const dir = join(keys.dir, name)
  mkdirSync(dir)
  const hostKeyPath = join(dir, 'host_key')
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `${name}-host`, '-f', hostKeyPath])
  chmodSync(hostKeyPath, 0o600)
  const hostPublicKey = readFileSync(`${hostKeyPath}.pub`, 'utf8').trim().split(/\s+/).slice(0, 2).join(' ')
  const fingerprint = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', `${hostKeyPath}.pub`], { encoding: 'utf8' }).split(/\s+/)[1]
  const port = await freePort()
  const knownHostsPath = join(dir, 'known_hosts')
  writeFileSync(knownHostsPath, `[127.0.0.1]:${port} ${hostPublicKey}\n`)
  const configPath = join(dir, 'sshd_config')
  writeFileSync(
    configPath,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${hostKeyPath}`,
      `AuthorizedKeysFile ${keys.authorizedKeysPath}`,
      'PubkeyAuthentication yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'StrictModes no',
      'PermitRootLogin no',
      `AllowUsers ${user}`,
      'UseDNS no',
      `PidFile ${join(dir, 'sshd.pid')}`,
      'MaxStartups 100:30:200',
      `MaxSessions ${options.maxSessions ?? 10}`,
      // A secret-looking and a plain variable in every session's environment (the executor drops the first).
      // The test run's id (vitest.leaks.ts) too, so that its leak check sees remote commands as well.
      // A PATH without Perl and procps: the agent needs neither (checked in agent-protocol.test.ts).
      `SetEnv DSH_TEST_API_TOKEN=hunter2 DSH_TEST_MONKEY=m DSH_TEST_PLAIN=visible PATH=${pathWithout(keys)}${runId()}${options.setEnv ? ` ${options.setEnv}` : ''}`,
      'LogLevel ERROR',
      ...(options.extraConfig ?? []),
      '',
    ].join('\n'),
  )
  let child: ChildProcess | undefined
  let log = ''
  const start = async () => {
    log = ''
    child = spawn(SSHD, ['-D', '-e', '-f', configPath], { stdio: ['ignore', 'ignore', 'pipe'] })
    // A test process that dies early must not leave its server behind.
    const listener = child
    const onExit = () => listener.kill('SIGKILL')
    process.once('exit', onExit)
    listener.once('exit', () => process.removeListener('exit', onExit))
    child.stderr!.on('data', (chunk: Buffer) => {
      if (log.length < 20_000) log += chunk.toString()
    })
    await waitForBanner(port, () => (child!.exitCode !== null ? `sshd exited (${child!.exitCode}): ${log}` : undefined))
  }
  const kill = async () => {
    signalAll(frozen, 'SIGCONT')
    frozen = []
    const listener = child
    if (!listener || listener.exitCode !== null || listener.signalCode !== null) return
    const pids = [listener.pid!, ...sshdDescendants(listener.pid!)]
    const gone = new Promise<void>((resolve) => listener.once('exit', () => resolve()))
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // Gone already.
      }
    }
    await gone
  }
  let frozen: number[] = []
  const signalAll = (pids: number[], signal: NodeJS.Signals) => {
    for (const pid of pids) {
      try {
        process.kill(pid, signal)
      } catch {
        // Gone already.
      }
    }
  }
  await start()
  return {
    freeze() {
      if (!child?.pid) return
      frozen = [child.pid, ...sshdDescendants(child.pid)]
      signalAll(frozen, 'SIGSTOP')
    },
    thaw() {
      signalAll(frozen, 'SIGCONT')
      frozen = []
    },
    port,
    hostKeyPath,
    hostPublicKey,
    fingerprint,
    knownHostsPath,
    kill,
    restart: start,
    async stop() {
      await kill()
    },
  }
}

async function waitForBanner(port: number, failed: () => string | undefined): Promise<void> {
  const deadline = Date.now() + 20_000
  for (;;) {
    const why = failed()
    if (why) throw new Error(why)
    const ok = await new Promise<boolean>((resolve) => {
      const socket = new Socket()
      const done = (result: boolean) => {
        socket.destroy()
        resolve(result)
      }
      socket.once('data', (data) => done(data.toString().startsWith('SSH-')))
      socket.once('error', () => done(false))
      socket.setTimeout(2_000, () => done(false))
      socket.connect(port, '127.0.0.1')
    })
    if (ok) return
    if (Date.now() > deadline) throw new Error(`sshd did not answer on port ${port}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Descendant processes of `root` whose name is sshd (the per-connection server processes). */
function sshdDescendants(root: number): number[] {
  const parent = new Map<number, number>()
  const comm = new Map<number, string>()
  for (const name of readdirSync('/proc')) {
    const pid = Number(name)
    if (!Number.isInteger(pid)) continue
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
      const close = stat.lastIndexOf(')')
      comm.set(pid, stat.slice(stat.indexOf('(') + 1, close))
      parent.set(pid, Number(stat.slice(close + 2).split(' ')[1]))
    } catch {
      // Gone.
    }
  }
  const found: number[] = []
  for (const [pid] of parent) {
    if (comm.get(pid) !== 'sshd') continue
    for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) {
      if (p === root) {
        found.push(pid)
        break
      }
    }
  }
  return found
}

/**
 * Live processes of a user, zombies excluded (what `pgrep -u <user> -a` lists, read from /proc so
 * the tests need no procps); with `pattern`, only those whose command line contains it.
 */
export function userProcesses(user = TEST_USER, pattern?: string): string[] {
  const uid = Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }).trim())
  const found: string[] = []
  for (const name of readdirSync('/proc')) {
    const pid = Number(name)
    if (!Number.isInteger(pid) || pid === process.pid) continue
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8')
      const realUid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1])
      const state = /^State:\s+(\S)/m.exec(status)?.[1]
      if (realUid !== uid || state === 'Z' || state === 'X') continue
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim()
      const shown = cmdline || `[${/^Name:\s+(.*)$/m.exec(status)?.[1] ?? '?'}]`
      if (pattern === undefined || cmdline.includes(pattern)) found.push(`${pid} ${shown}`)
    } catch {
      // Gone meanwhile.
    }
  }
  return found
}
