import { afterAll, describe, expect, it } from 'vitest'
import { bash, type StdioServer, startStdio } from './helpers.js'

describe('dsh-bash mcp over stdio: a logged warning stays off the protocol', () => {
  let server: StdioServer | undefined
  afterAll(async () => {
    await server?.close()
  })

  it('the executor warns (its pipe pool is gone): stdout stays pure JSON-RPC, the warning is on stderr', async () => {
    server = await startStdio()
    const errors: unknown[] = []
    // A line on stdout that is not JSON-RPC reaches the SDK client as a transport error.
    server.client.onerror = (error) => void errors.push(error)
    // The command's stdout is a FIFO of the executor's pool; its directory (the FIFO itself is
    // unlinked already) goes, so the pool can make no more pipes once it runs dry.
    const removed = await bash(server.client, 'd=$(readlink /proc/$$/fd/1); d=$(dirname "$d"); case $d in */dsh-bash-pipes-*) rm -rf -- "$d" && echo removed;; esac')
    expect(removed).toEqual({ texts: ['removed\n'], isError: false })
    const warning = 'dsh-bash real pipes failed, commands get sockets for stdout and stderr'
    let runs = 0
    while (!server.stderr().includes(warning)) {
      expect(await bash(server.client, 'echo ok')).toEqual({ texts: ['ok\n'], isError: false })
      if (++runs > 200) throw new Error(`no warning after ${runs} commands; stderr: ${server.stderr()}`)
    }
    expect(server.stderr()).toMatch(/^\[W\] dsh-bash real pipes failed, commands get sockets for stdout and stderr: cannot make a pipe/m)
    // The session goes on, on sockets, and the client saw nothing but protocol messages.
    expect(await bash(server.client, 'echo still')).toEqual({ texts: ['still\n'], isError: false })
    expect(errors).toEqual([])
  })
})
