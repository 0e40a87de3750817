import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { bash, connectHttp, MAIN, marker, pidsWith, startHttp, waitFor } from './helpers.js'

/** `--nice`: the server's autogroup, never the commands' (src/priority.ts). */
const autogroups = (() => {
  try {
    return readFileSync('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').trim() === '1' && readFileSync('/proc/self/autogroup', 'utf8') !== ''
  } catch {
    return false
  }
})()
const root = process.getuid?.() === 0
if (!autogroups) console.log('skipped: --nice needs kernel autogroups (/proc/sys/kernel/sched_autogroup_enabled = 1)')
else if (!root) console.log('skipped: a negative --nice needs root')

const autogroupOf = (pid: number) => readFileSync(`/proc/${pid}/autogroup`, 'utf8').trim()

describe.skipIf(!autogroups)('dsh-bash mcp --nice', () => {
  it.skipIf(!root)('sets the server’s autogroup (a session of its own: no warning); its commands run in autogroups of their own at nice 0', async () => {
    const server = await startHttp(['--nice', '-5'], {}, { detached: true })
    try {
      expect(autogroupOf(server.proc.pid!)).toMatch(/^\/autogroup-\d+ nice -5$/)
      const client = await connectHttp(server.url, server.token)
      try {
        const result = await bash(client.client, 'cat /proc/self/autogroup')
        expect(result.isError).toBe(false)
        expect(result.texts[0]).toMatch(/^\/autogroup-\d+ nice 0\n$/)
        expect(result.texts[0].split(' ')[0]).not.toBe(autogroupOf(server.proc.pid!).split(' ')[0])
      } finally {
        await client.close()
      }
      expect(server.stderr()).not.toContain('--nice')
    } finally {
      await server.stop()
    }
  })

  it.skipIf(!root)('a process without CAP_SYS_NICE cannot lower it: exit 1, named (root with the capability dropped, through setpriv)', () => {
    // Still root, so it reads the checkout wherever it is: as nobody it could not run the CLI from a
    // private (0700) directory at all, which is where a clean clone may well sit.
    const result = spawnSync('setpriv', ['--bounding-set', '-sys_nice', process.execPath, MAIN, 'mcp', '--nice=-5'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 30_000 })
    if (result.error) throw result.error
    expect(result.stderr).toBe('dsh-bash: --nice -5: not permitted (a value below the current one needs root or CAP_SYS_NICE)\n')
    expect(result.status).toBe(1)
  })

  it('warns when the session is shared (the autogroup is the session’s)', async () => {
    const tag = marker()
    // The server execs in place of a shell that left a child in the session.
    const server = await startHttp(['--nice=3'], {}, { detached: true, wrap: (argv) => ['bash', '--noprofile', '--norc', '-c', `exec -a ${tag} sleep 30 & exec "$@"`, 'bash', ...argv] })
    try {
      await waitFor('the warning', () => server.stderr().includes('--nice 3 applies'))
      expect(server.stderr()).toContain("dsh-bash: --nice 3 applies to this session's autogroup, shared with 1 other process: start the server with setsid to change only its own\n")
      expect(autogroupOf(server.proc.pid!)).toMatch(/ nice 3$/)
    } finally {
      await server.stop()
      for (const pid of pidsWith(tag)) process.kill(pid, 'SIGKILL')
    }
  })
})
