import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runServerProcess } from './server-process.js'
import type { SuiteContext } from './suite-context.js'

/** The conformance tests of `describe('descriptors: pipes as in a terminal, nothing inherited')`. */
export function descriptorTests(suite: SuiteContext): void {
  const { workdir, executor, run, start, options } = suite
  describe('descriptors: pipes as in a terminal, nothing inherited', () => {
    it('/dev/stdout, /dev/stderr and /dev/fd/N open (real pipes, not sockets)', async () => {
      const bash = await executor()
      const result = await run(bash, 'echo x > /dev/stderr; echo y > /dev/stdout; echo z > /dev/fd/1; echo w > /dev/fd/2')
      expect(result).toMatchObject({ exitCode: 0, stdout: { text: 'y\nz\n' }, stderr: { text: 'x\nw\n' } })
    })

    it('tee /dev/stdout writes twice to stdout', async () => {
      const result = await run(await executor(), 'echo t | tee /dev/stdout; echo e | tee /dev/stderr >/dev/null')
      expect(result).toMatchObject({ exitCode: 0, stdout: { text: 't\nt\n' }, stderr: { text: 'e\n' } })
    })

    it('exec 3>/dev/stdout and 4>/dev/stderr give descriptors that reach the streams', async () => {
      const result = await run(await executor(), 'exec 3>/dev/stdout 4>/dev/stderr; echo y >&3; echo z >&4; exec 3>&- 4>&-; echo end')
      expect(result).toMatchObject({ exitCode: 0, stdout: { text: 'y\nend\n' }, stderr: { text: 'z\n' } })
    })

    it('cat file > /dev/fd/1 copies the file to stdout', async () => {
      // A private temp file (the workdir may be read-only under a sandbox).
      const result = await run(await executor(), 'f=$(mktemp) && printf "line 1\\nline 2\\n" >"$f" && cat "$f" > /dev/fd/1; s=$?; rm -f "$f"; exit $s')
      expect(result).toMatchObject({ exitCode: 0, stdout: { text: 'line 1\nline 2\n' }, stderr: { text: '' } })
    })

    it('cat /dev/stdin reads an empty stdin and succeeds', async () => {
      const result = await run(await executor(), 'cat /dev/stdin; echo "status $?"; cat </dev/stdin | wc -c')
      expect(result).toMatchObject({ exitCode: 0, stderr: { text: '' } })
      expect(result.stdout.text.replaceAll(' ', '')).toBe('status0\n0\n')
    })

    it('stdout and stderr are pipes (FIFOs), stdin is /dev/null', async () => {
      const result = await run(await executor(), 'stat -L -c %F /proc/self/fd/1 /proc/self/fd/2; test -p /dev/stdout && test -p /dev/stderr && echo pipes; stat -L -c %t,%T /dev/stdin; stat -L -c %t,%T /dev/null')
      expect(result.exitCode).toBe(0)
      const lines = result.stdout.text.split('\n')
      expect(lines.slice(0, 3)).toEqual(['fifo', 'fifo', 'pipes'])
      // stdin is the null device (same major,minor as /dev/null).
      expect(lines[3]).toBe(lines[4])
    })

    it('a command starts with only descriptors 0, 1 and 2 (foreground and background)', async () => {
      const bash = await executor()
      // `ls` opens the directory it lists as descriptor 3: that one is its own.
      const result = await run(bash, 'ls /proc/self/fd')
      expect(result.stdout.text).toBe('0\n1\n2\n3\n')
      const task = start(bash, 'ls /proc/self/fd')
      await task.done
      expect(bash.readOutput(task.id).delta).toBe('0\n1\n2\n3\n')
    })

    if (options.serverProcess) {
      const server = options.serverProcess
      it("descriptors the server inherited (fd 3, fd 200) never reach a command", async () => {
        const scratch = await mkdtemp(join(tmpdir(), 'dsh-bash-conformance-fds-'))
        try {
          const log = join(scratch, 'inherited.log')
          const report = await runServerProcess(server, log, workdir)
          // The server itself really has them (else the test proves nothing)…
          expect(report.serverFds).toEqual(expect.arrayContaining(['3', '200']))
          // …and no command sees them: not the foreground one, not the background one.
          expect(report.foreground).toBe('0\n1\n2\n3\n')
          expect(report.background).toBe('0\n1\n2\n3\n')
          expect(report.write).toMatch(/^closed/)
          expect(await readFile(log, 'utf8')).toBe('')
        } finally {
          await rm(scratch, { recursive: true, force: true })
        }
      })
    }
  })
}
