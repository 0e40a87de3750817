// Issue #18's acceptance through the real CLI server process: the MCP contract checks that the local
// executor passes (mcp-stdio.test.ts: the contract texts, truncation with the spill file, background
// tasks and their notice, kill, errors) pass with `--executor container --image <offline image>`,
// and no container of the server is left after a clean stop or within 5 s of a SIGKILL.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { contractChecks } from './contract-checks.js'
import { bash, isAlive, ROOT, type StdioServer, startStdio, waitFor } from './helpers.js'

const docker = await import('../../bash-container/test/docker.js')
const built = existsSync(join(ROOT, 'packages/bash-container/dist/index.js'))
const reason = built ? docker.unavailableReason() : 'packages/bash-container is not built'
if (reason) console.warn(`skipping the MCP contract checks through the container executor: ${reason}`)

/** Containers of ours (label dsh-bash.executor=container) created by the server with this pid, all states. */
function containersOf(pid: number): string[] {
  const out = spawnSync('docker', ['ps', '-a', '--no-trunc', '--filter', 'label=dsh-bash.executor=container', '--format', '{{.ID}} {{.Label "dsh-bash.server"}}'], { encoding: 'utf8' }).stdout
  return out
    .split('\n')
    .filter(Boolean)
    .filter((line) => line.split(' ')[1]?.split('/')[1] === String(pid))
    .map((line) => line.split(' ')[0])
}

const start = (dir: string) => startStdio(['--executor', 'container', '--image', docker.TEST_IMAGE, '--engine', docker.ENGINE_URL, '--workdir', dir])

describe.skipIf(reason !== undefined)('dsh-bash mcp --executor container: the MCP contract checks (real server process, real engine)', () => {
  let server: StdioServer
  let dir: string

  beforeAll(async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-container-contract-')))
    server = await start(dir)
  })
  afterAll(async () => {
    const pid = server?.pid
    await server?.close()
    rmSync(dir, { recursive: true, force: true })
    // A clean stop leaves no container of this server.
    if (pid !== undefined) {
      await waitFor('the server to exit', () => !isAlive(pid))
      expect(containersOf(pid)).toEqual([])
    }
  })

  // Relative paths: the workspace is bind-mounted at /workspace; the files appear in `dir` on the host.
  contractChecks(() => ({ server, dir, pathInCommand: (name) => name }), [['pwd', {}, '/workspace\n']])

  it('the session has one container of this server (what the clean stop must remove)', async () => {
    expect(containersOf(server.pid)).toHaveLength(1)
  })
})

describe.skipIf(reason !== undefined)('dsh-bash mcp --executor container: no container is left', () => {
  it('after SIGKILL of the server process, none of its containers is left within 5 s', async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-container-kill-')))
    const server = await start(dir)
    try {
      expect(await bash(server.client, 'echo up')).toEqual({ texts: ['up\n'], isError: false })
      await bash(server.client, 'sleep 300', { run_in_background: true })
      expect(containersOf(server.pid)).toHaveLength(1)
      process.kill(server.pid, 'SIGKILL')
      const killedAt = Date.now()
      await waitFor('the containers of the killed server to be gone', () => containersOf(server.pid).length === 0, 5_000)
      console.log(`[cli] the container was gone ${Date.now() - killedAt} ms after SIGKILL of the server`)
    } finally {
      await server.close().catch(() => {})
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
