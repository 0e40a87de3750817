import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseTrace, type LineTrace } from './trace.js'

/**
 * The differential oracle's runner: real bash, in a throwaway bubblewrap sandbox (tmpfs /tmp, no
 * network, read-only root), under strace. Lines run in batches, one bwrap+strace per batch, each
 * line in its own `bash -c LINE oracle-<n>` child (its `$0` names it), so the trace can be split
 * by process tree. Each line gets a fresh copy of the work directory.
 */

const SYSCALLS = [
  'execve', 'execveat', 'open', 'openat', 'openat2', 'creat', 'rename', 'renameat', 'renameat2', 'unlink', 'unlinkat',
  'rmdir', 'mkdir', 'mkdirat', 'link', 'linkat', 'symlink', 'symlinkat', 'truncate', 'chmod', 'fchmodat', 'chown',
  'fchownat', 'lchown', 'mknod', 'mknodat', 'utimensat', 'utimes', 'connect', 'clone', 'clone3', 'fork', 'vfork',
  // Changes to the machine rather than to files (they fail in the sandbox, but the attempt counts).
  'clock_settime', 'settimeofday', 'clock_adjtime', 'adjtimex', 'sethostname', 'setdomainname', 'mount', 'umount2', 'reboot',
  'swapon', 'swapoff', 'init_module', 'finit_module', 'delete_module', 'kexec_load',
]

/**
 * Values an attacker could have left in the environment (or in a persistent shell) for names a
 * subset line may expand: subscripts with substitutions, operators, socket paths.
 */
export const HOSTILE_ENV: Record<string, string> = {
  x: 'a[$(touch pwned-x)]',
  y: '$(touch pwned-y)',
  z: '`touch pwned-z`',
  op: '-v',
  fmt: '-v',
  a: '-v',
  b: 'a[$(touch pwned-b)]',
  f: '/dev/tcp/127.0.0.1/9',
  GLOB: '*',
  OPT: '--pre=touch pwned-opt',
  FOO: '-exec',
  N: '1+a[$(touch pwned-n)]',
  // Split into words, a value can move where a wrapper's command starts (`timeout $w ls` runs touch).
  w: '5 touch pwned-w',
  u: '-u',
  // `cd src` may land elsewhere (and print where): the directory bash picks, not the policy.
  CDPATH: '/tmp/tpl',
  OLDPWD: '/tmp/tpl/evilbin',
}

/** Why the oracle cannot run here, or undefined when bwrap and strace work. */
export function oracleUnavailable(): string | undefined {
  for (const tool of ['bwrap', 'strace']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `${tool} is not installed`
  }
  const probe = spawnSync(
    'bwrap',
    ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-user', '--cap-drop', 'ALL', '--unshare-net', 'strace', '-f', '-qq', '-o', '/dev/null', 'grep', '-qE', '^CapBnd:[[:space:]]+0+$', '/proc/self/status'],
    { timeout: 10_000 },
  )
  if (probe.status !== 0) return `bwrap (user namespace, no capabilities) with strace does not run here: ${String(probe.stderr).trim().slice(0, 200) || `exit ${probe.status}`}`
  return undefined
}

const DRIVER = String.raw`
mkdir -p /tmp/w /tmp/home
n=0
while IFS= read -r -d '' line; do
  mkdir "/tmp/w/$n" && cp -a /tmp/tpl/. "/tmp/w/$n/"
  (cd "/tmp/w/$n" && exec timeout -s KILL "$ORACLE_TIMEOUT" /usr/bin/bash --noprofile --norc -c "$line" "oracle-$n") </dev/null >/dev/null 2>&1
  n=$((n+1))
done < /tmp/out/lines
`

/** A work directory every line starts in: files to read, a git repository, hostile file names, a PATH trap. */
function makeTemplate(root: string): string {
  const tpl = join(root, 'tpl')
  mkdirSync(join(tpl, 'src'), { recursive: true })
  mkdirSync(join(tpl, 'evilbin'))
  writeFileSync(join(tpl, 'notes.txt'), 'a[$( notes\nline two\nTODO three\n')
  writeFileSync(join(tpl, 'a.txt'), 'alpha\nbeta\n')
  writeFileSync(join(tpl, 'input.txt'), 'one\ntwo\n')
  writeFileSync(join(tpl, 'src', 'x.ts'), 'export const x = 1 // TODO\n')
  writeFileSync(join(tpl, 'src', 'y.ts'), 'export const y = 2\n')
  for (const name of ['-delete', '--output=pwned-out', '-fprint', '--pre=touch', '-exec']) writeFileSync(join(tpl, name), '')
  // Behind a literal prefix (`src/*`) such names stay operands.
  for (const name of ['-delete', '--pre=touch']) writeFileSync(join(tpl, 'src', name), '')
  for (const name of ['ls', 'cat', 'grep', 'echo']) {
    writeFileSync(join(tpl, 'evilbin', name), '#!/bin/sh\ntouch pwned-evilbin\n')
    chmodSync(join(tpl, 'evilbin', name), 0o755)
  }
  spawnSync('git', ['init', '-q', tpl])
  // For the tar reader: archives with a directory, a symbolic and a hard link; for less: a lesskey
  // source whose #env section sets an input preprocessor.
  const members = join(root, 'members')
  mkdirSync(join(members, 'd'), { recursive: true })
  writeFileSync(join(members, 'd', 'f'), 'member\n')
  spawnSync('ln', ['-s', 'd/f', join(members, 'sl')])
  spawnSync('ln', [join(members, 'd', 'f'), join(members, 'hl')])
  spawnSync('tar', ['-cf', join(tpl, 'a.tar'), '-C', members, 'd', 'sl', 'hl'])
  spawnSync('tar', ['-czf', join(tpl, 'a.tar.gz'), '-C', members, 'd', 'sl', 'hl'])
  writeFileSync(join(tpl, 'keys'), '#env\nLESSOPEN=|touch pwned-lessopen; cat %s\n')
  return tpl
}

export interface RunOptions {
  /** Parallel sandboxes; default: the number of CPUs, at most 4. */
  batches?: number
  /** Seconds one line may run before it is killed. */
  lineTimeout?: number
}

/** Runs every line under the oracle and returns what each one really did, in input order. */
export async function runLines(lines: readonly string[], options: RunOptions = {}): Promise<LineTrace[]> {
  const root = mkdtempSync(join(tmpdir(), 'dsh-policy-oracle-'))
  try {
    const tpl = makeTemplate(root)
    const count = Math.max(1, Math.min(options.batches ?? Math.min(4, cpus().length), lines.length))
    const batches: number[][] = Array.from({ length: count }, () => [])
    lines.forEach((_line, index) => batches[index % count].push(index))
    const results: LineTrace[] = new Array(lines.length)
    await Promise.all(
      batches.map(async (indexes, b) => {
        const out = join(root, `batch-${b}`)
        mkdirSync(out)
        writeFileSync(join(out, 'lines'), indexes.map((i) => lines[i] + '\0').join(''))
        writeFileSync(join(out, 'driver.sh'), DRIVER)
        await runBatch(tpl, out, options.lineTimeout ?? 5, indexes.length)
        const traces = parseTrace(readFileSync(join(out, 'trace'), 'utf8'), indexes.length)
        indexes.forEach((lineIndex, n) => (results[lineIndex] = traces[n]))
      }),
    )
    return results
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}

function runBatch(tpl: string, out: string, lineTimeout: number, count: number): Promise<void> {
  const env = Object.entries({ ...HOSTILE_ENV, PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/tmp/home', LANG: 'C', GIT_OPTIONAL_LOCKS: '0', ORACLE_TIMEOUT: String(lineTimeout) })
  const args = [
    '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp',
    '--ro-bind', tpl, '/tmp/tpl', '--bind', out, '/tmp/out',
    // No capabilities at all, in a user namespace of its own: an attack line run as root must not
    // reach the host (the first full run executed `date -s` and set the machine's clock).
    '--unshare-user', '--cap-drop', 'ALL',
    '--unshare-net', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try', '--die-with-parent', '--new-session', '--chdir', '/tmp',
    'strace', '-f', '-qq', '-s', '65536', '-e', `trace=${SYSCALLS.join(',')}`, '-e', 'signal=none', '-o', '/tmp/out/trace',
    'env', '-i', ...env.map(([key, value]) => `${key}=${value}`), '/usr/bin/bash', '--noprofile', '--norc', '/tmp/out/driver.sh',
  ]
  return new Promise((resolve, reject) => {
    const child = spawn('bwrap', args, { stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (chunk) => (stderr += chunk))
    // Every line has its own timeout; this only guards against the driver itself hanging.
    const guard = setTimeout(() => child.kill('SIGKILL'), (count * (lineTimeout + 1) + 30) * 1000)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(guard)
      if (code === 0) resolve()
      else reject(new Error(`the oracle sandbox exited with ${code}: ${stderr.slice(0, 500)}`))
    })
  })
}
