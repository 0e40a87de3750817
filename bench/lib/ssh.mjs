/**
 * The SSH executor against a throw-away OpenSSH server on 127.0.0.1 (the same set-up as the
 * package's test fixture, packages/bash-ssh/test/sshd.ts): a dedicated non-root user `dshtest`,
 * a temporary ed25519 key, sshd on a free port with a known_hosts file. Needs root and sshd.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, Socket } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import ssh2 from 'ssh2'

const dist = fileURLToPath(new URL('../../packages/bash-ssh/dist/index.js', import.meta.url))
const SSHD = '/usr/sbin/sshd'
const USER = 'dshtest'

function unavailable() {
  if (!existsSync(dist)) return 'packages/bash-ssh is not built (not landed yet)'
  if (!existsSync(SSHD)) return `${SSHD} is missing (openssh-server)`
  if (process.getuid?.() !== 0) return 'needs root (creates a user and starts sshd)'
  if (spawnSync('ssh-keygen', ['-?'], { stdio: 'ignore' }).error) return 'ssh-keygen is missing'
  return undefined
}

function ensureUser() {
  for (let attempt = 0; ; attempt++) {
    if (spawnSync('id', ['-u', USER]).status === 0) break
    const made = spawnSync('useradd', ['-m', '-s', '/bin/bash', '-p', '*', USER])
    if (made.status === 0 || attempt > 20) break
    execFileSync('sleep', ['0.2'])
  }
  const shadow = spawnSync('getent', ['shadow', USER], { encoding: 'utf8' }).stdout ?? ''
  if (shadow.split(':')[1]?.startsWith('!')) spawnSync('usermod', ['-p', '*', USER])
  return {
    uid: Number(execFileSync('id', ['-u', USER], { encoding: 'utf8' }).trim()),
    gid: Number(execFileSync('id', ['-g', USER], { encoding: 'utf8' }).trim()),
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

async function waitForBanner(port, failed) {
  const deadline = Date.now() + 20_000
  for (;;) {
    const why = failed()
    if (why) throw new Error(why)
    const ok = await new Promise((resolve) => {
      const socket = new Socket()
      const done = (result) => {
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

/** → {available: true, plugin, config, workspace, stop()} | {available: false, reason} */
export async function sshSetup() {
  const why = unavailable()
  if (why) return { available: false, reason: `not measured: ${why}` }
  let mod
  try {
    mod = await import('@deepseek-ai/dsh-bash-ssh')
  } catch (error) {
    return { available: false, reason: `not measured: cannot load @deepseek-ai/dsh-bash-ssh: ${error.message}` }
  }
  if (typeof mod.SshExecutor !== 'function') return { available: false, reason: 'not measured: @deepseek-ai/dsh-bash-ssh exports no SshExecutor' }
  const { uid, gid } = ensureUser()
  const dir = realpathSync(mkdtempSync('/tmp/dsh-bench-ssh-'))
  chmodSync(dir, 0o755)
  const userKeyPath = join(dir, 'user_key')
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'dsh-bench', '-f', userKeyPath])
  const authorizedKeysPath = join(dir, 'authorized_keys')
  writeFileSync(authorizedKeysPath, readFileSync(`${userKeyPath}.pub`), { mode: 0o644 })
  chmodSync(authorizedKeysPath, 0o644)
  const workspace = join(dir, 'work')
  mkdirSync(workspace)
  execFileSync('chown', [`${uid}:${gid}`, workspace])
  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 })
  const hostKeyPath = join(dir, 'host_key')
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'dsh-bench-host', '-f', hostKeyPath])
  chmodSync(hostKeyPath, 0o600)
  const hostPublicKey = readFileSync(`${hostKeyPath}.pub`, 'utf8').trim().split(/\s+/).slice(0, 2).join(' ')
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
      `AuthorizedKeysFile ${authorizedKeysPath}`,
      'PubkeyAuthentication yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'StrictModes no',
      'PermitRootLogin no',
      `AllowUsers ${USER}`,
      'UseDNS no',
      `PidFile ${join(dir, 'sshd.pid')}`,
      'MaxStartups 100:30:200',
      'MaxSessions 10',
      'LogLevel ERROR',
      '',
    ].join('\n'),
  )
  let log = ''
  const child = spawn(SSHD, ['-D', '-e', '-f', configPath], { stdio: ['ignore', 'ignore', 'pipe'] })
  child.stderr.on('data', (chunk) => {
    if (log.length < 20_000) log += chunk
  })
  // A bench interrupted half-way must not leave its sshd behind.
  const onExit = () => child.kill('SIGKILL')
  process.once('exit', onExit)
  const stop = async () => {
    process.off('exit', onExit)
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await gone
    }
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    await waitForBanner(port, () => (child.exitCode !== null ? `sshd exited (${child.exitCode}): ${log}` : undefined))
  } catch (error) {
    await stop()
    return { available: false, reason: `not measured: the bench's sshd did not start: ${error.message.split('\n')[0]}` }
  }
  const host = { host: '127.0.0.1', port, username: USER, privateKeyPath: userKeyPath, hostKey: { knownHostsPath } }
  return {
    available: true,
    plugin: mod.SshExecutor,
    /** A plain ssh2 connection to the same server: the floor of one exec per call. */
    bareConnection: () => bareConnection(host, readFileSync(userKeyPath, 'utf8'), hostPublicKey),
    workspace,
    config: {
      cwd: workspace,
      hosts: [{ host: '127.0.0.1', port, username: USER, privateKeyPath: userKeyPath, hostKey: { knownHostsPath } }],
    },
    stop,
  }
}

async function bareConnection(host, privateKey, hostPublicKey) {
  const conn = new ssh2.Client()
  const expected = Buffer.from(hostPublicKey.split(' ')[1], 'base64')
  await new Promise((resolve, reject) => {
    conn.once('ready', resolve)
    conn.once('error', reject)
    conn.connect({ host: host.host, port: host.port, username: host.username, privateKey, hostVerifier: (key) => Buffer.compare(key, expected) === 0 })
  })
  return {
    exec: (command) =>
      new Promise((resolve, reject) => {
        conn.exec(command, (error, channel) => {
          if (error) return reject(error)
          let code = null
          channel.on('exit', (c) => (code = c))
          channel.on('data', () => {})
          channel.stderr.on('data', () => {})
          channel.once('close', () => resolve({ code }))
        })
      }),
    end: () => conn.end(),
  }
}
