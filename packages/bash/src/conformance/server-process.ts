import { spawn } from 'node:child_process'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { ServerProcessOptions } from './types.js'

/** What the server child process reports (see `runServerProcess`). */
export interface ServerReport {
  serverFds: string[]
  foreground: string
  background: string
  write: string
}

/**
 * Starts `node` through a shell that opens fd 200 (append, no close-on-exec) on `log`, with a pipe
 * as fd 3 as well, loads the executor there, runs `ls /proc/self/fd` in the foreground and in the
 * background and tries to write to fd 200 from a command; prints a JSON report.
 */
export async function runServerProcess(server: ServerProcessOptions, log: string, workdir: string): Promise<ServerReport> {
  const modulePath = server.module.startsWith('file:') ? fileURLToPath(server.module) : server.module
  const code = `
    import { readdirSync } from 'node:fs'
    import { Context } from 'cordis'
    const mod = await import(${JSON.stringify(modulePath)})
    const ctx = new Context()
    ctx.plugin(mod[${JSON.stringify(server.exportName)}], ${JSON.stringify(server.config)})
    const bash = ctx.get('bash')
    if (!bash) throw new Error('the executor did not load')
    const workdir = ${JSON.stringify(workdir)}
    const report = { serverFds: readdirSync('/proc/self/fd') }
    report.foreground = (await bash.run(bash.resolve({ command: 'ls /proc/self/fd', workdir }))).stdout.text
    const task = bash.start(bash.resolve({ command: 'ls /proc/self/fd', workdir }))
    await task.done
    report.background = bash.readOutput(task.id).delta
    const write = await bash.run(bash.resolve({ command: '{ echo leaked >&200; } 2>/dev/null && echo open || echo closed', workdir }))
    report.write = write.stdout.text
    await bash.shutdown()
    process.stdout.write(JSON.stringify(report))
  `
  const child = spawn('bash', ['--noprofile', '--norc', '-c', 'exec 200>>"$1"; exec "$2" --input-type=module -e "$3"', 'dsh-bash-conformance', log, process.execPath, code], {
    cwd: server.cwd ?? dirname(modulePath),
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')))
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')))
  const exitCode = await new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)))
  if (exitCode !== 0) throw new Error(`the server process failed (exit ${exitCode}): ${err.trim()}`)
  return JSON.parse(out) as ServerReport
}
