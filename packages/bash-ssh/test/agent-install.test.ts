/**
 * The agent's copy on an SSH host (the user's cache, once per version) against what another user
 * of the host, or a broken earlier copy, may have left there: only a file the user owns, that
 * nobody else may write and that has the agent's SHA-256 is ever executed; anything else is
 * replaced by a fresh installation; a cache directory others may write is refused.
 */
import { execFileSync } from 'node:child_process'
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { agentArchOf, agentBinary } from '@deepseek-ai/dsh-bash-agent'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createSsh, hostEntry, type SshInstance } from './helpers.js'
import { makeKeys, type SshdInstance, startSshd, type TestKeys, unavailableReason } from './sshd.js'

const skip = unavailableReason()
if (skip) console.warn(`[dsh-bash-ssh] skipping the agent installation tests: ${skip}`)
const USER = 'dshtest6'

describe.skipIf(skip !== undefined)("the agent's copy in the user's cache", () => {
  let keys: TestKeys
  let sshd: SshdInstance
  let uid = 0
  let gid = 0
  let home = ''
  const binary = agentBinary(agentArchOf(process.arch)!)
  const instances: SshInstance[] = []
  const cache = () => `${home}/.cache/dsh-bash`
  const copy = () => `${cache()}/agent-${binary.sha256}`

  beforeAll(async () => {
    keys = makeKeys(USER)
    uid = Number(execFileSync('id', ['-u', USER], { encoding: 'utf8' }).trim())
    gid = Number(execFileSync('id', ['-g', USER], { encoding: 'utf8' }).trim())
    home = execFileSync('getent', ['passwd', USER], { encoding: 'utf8' }).split(':')[5]
    sshd = await startSshd(keys, 'install')
  })
  afterEach(async () => {
    for (const instance of instances.splice(0)) await instance.dispose()
    rmSync(`${home}/.cache`, { recursive: true, force: true })
  })
  afterAll(async () => {
    await sshd?.stop()
    keys?.remove()
  })

  async function run(command: string) {
    const instance = await createSsh({ cwd: keys.workdir, hosts: [hostEntry(keys, sshd)] })
    instances.push(instance)
    return instance.executor.run(instance.executor.resolve({ command }))
  }

  /** A cache as another user could leave it: the directory is the user's (`~/.cache` must be). */
  function plant(content: Buffer | string, mode: number, owner = { uid: 0, gid: 0 }): void {
    mkdirSync(cache(), { recursive: true, mode: 0o700 })
    chownSync(`${home}/.cache`, uid, gid)
    chownSync(cache(), uid, gid)
    writeFileSync(copy(), content)
    chownSync(copy(), owner.uid, owner.gid)
    chmodSync(copy(), mode)
  }

  it('the first command installs it (0500 in a 0700 directory, the user\'s); the next connection runs the same copy', async () => {
    expect((await run('echo one')).stdout.text).toBe('one\n')
    expect(statSync(copy())).toMatchObject({ uid, mode: 0o100500 })
    expect(statSync(cache())).toMatchObject({ uid, mode: 0o40700 })
    expect(readFileSync(copy()).equals(binary.bytes)).toBe(true)
    const installed = statSync(copy()).ino
    expect((await run('echo two')).stdout.text).toBe('two\n')
    expect(statSync(copy()).ino).toBe(installed)
  })

  it('a file of another user under the right name is never run, even with the right content: it is replaced', async () => {
    const proof = `${keys.dir}/planted-ran`
    // Another user's file: were it run, its owner could have changed it between the check and the exec.
    plant(binary.bytes, 0o755)
    expect(statSync(copy()).uid).toBe(0)
    expect((await run('echo ok')).stdout.text).toBe('ok\n')
    expect(statSync(copy())).toMatchObject({ uid, mode: 0o100500 })
    // And one that is not the agent at all.
    rmSync(copy())
    plant(`#!/bin/sh\ntouch ${proof}\n`, 0o755)
    expect((await run('echo ok')).stdout.text).toBe('ok\n')
    expect(existsSync(proof)).toBe(false)
    expect(readFileSync(copy()).equals(binary.bytes)).toBe(true)
  })

  it('a copy of the user that others may write, or with other content (cut short), is replaced', async () => {
    plant(binary.bytes, 0o570, { uid, gid })
    expect((await run('echo ok')).stdout.text).toBe('ok\n')
    expect(statSync(copy()).mode).toBe(0o100500)
    rmSync(copy())
    plant(binary.bytes.subarray(0, 1000), 0o500, { uid, gid })
    expect((await run('echo ok')).stdout.text).toBe('ok\n')
    expect(readFileSync(copy()).equals(binary.bytes)).toBe(true)
  })

  it('a cache directory others may write is refused, naming it; nothing is run from it', async () => {
    mkdirSync(cache(), { recursive: true })
    chownSync(`${home}/.cache`, uid, gid)
    chownSync(cache(), uid, gid)
    chmodSync(cache(), 0o777)
    await expect(run('true')).rejects.toMatchObject({ code: 'DSH_AGENT_INSTALL', message: expect.stringMatching(new RegExp(`^cannot install the dsh-bash agent on ${USER}@127\\.0\\.0\\.1:\\d+: ${cache()} is writable by others \\(mode 777\\)$`)) })
    expect(existsSync(copy())).toBe(false)
  })

  it('two connections installing at once both start, and the copy is whole', async () => {
    const [a, b] = await Promise.all([run('echo a'), run('echo b')])
    expect([a.stdout.text, b.stdout.text]).toEqual(['a\n', 'b\n'])
    expect(readFileSync(copy()).equals(binary.bytes)).toBe(true)
    expect(execFileSync('ls', ['-A', cache()], { encoding: 'utf8' }).trim().split('\n')).toEqual([`agent-${binary.sha256}`])
  })
})
