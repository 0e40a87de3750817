import { limitDefaults } from '../src/limit-defaults.js'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parseHostPort, parseMcpArgs, parseReplArgs, UsageError } from '../src/args.js'
import { MAIN, ROOT } from './helpers.js'
import { TOKEN_FLAG_REFUSED } from '../src/token.js'

function run(...args: string[]) {
  const result = spawnSync(process.execPath, [MAIN, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 30_000, input: '' })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

describe('dsh-bash: help, usage errors and exit codes', () => {
  it.each([
    [['--help'], 'Usage: dsh-bash <command> [flags]'],
    [['-h'], 'Usage: dsh-bash <command> [flags]'],
    [['help'], 'Usage: dsh-bash <command> [flags]'],
    [['help', 'mcp'], 'Usage: dsh-bash mcp [flags]'],
    [['mcp', '--help'], 'Usage: dsh-bash mcp [flags]'],
    [['mcp', '--http', 'x', '--help'], 'Usage: dsh-bash mcp [flags]'],
    [['repl', '--help'], 'Usage: dsh-bash repl [flags]'],
    [['repl', '-h'], 'Usage: dsh-bash repl [flags]'],
    [['help', 'agent'], 'Usage: dsh-bash agent [flags] PROMPT'],
    [['agent', '--help'], 'Usage: dsh-bash agent [flags] PROMPT'],
  ])('%j prints help on stdout and exits 0', (args, first) => {
    const { code, stdout, stderr } = run(...args)
    expect(code).toBe(0)
    expect(stdout.split('\n')[0]).toBe(first)
    expect(stderr).toBe('')
  })

  it.each([[['--version']], [['-v']], [['mcp', '--version']], [['repl', '-v']], [['agent', '--version']], [['mcp', '--executor', 'ssh', '--version']]])(
    '%j prints the version',
    (args) => {
      expect(run(...args)).toEqual({ code: 0, stdout: '0.1.0\n', stderr: '' })
    },
  )

  it.each([
    [[], 'dsh-bash: missing command (mcp, repl, agent or reply)\nTry "dsh-bash --help".\n'],
    [['frob'], 'dsh-bash: unknown command "frob" (expected mcp, repl, agent or reply)\nTry "dsh-bash --help".\n'],
    [['--frob'], 'dsh-bash: unknown flag --frob\nTry "dsh-bash --help".\n'],
    [['help', 'frob'], 'dsh-bash: help: unknown command "frob"\nTry "dsh-bash --help".\n'],
    [['mcp', '--http', 'x'], 'dsh-bash: --http: expected HOST:PORT, got "x"\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--http', '127.0.0.1:99999'], 'dsh-bash: --http: expected HOST:PORT, got "127.0.0.1:99999"\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--http'], 'dsh-bash: --http: expected a value\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--bogus'], 'dsh-bash: unknown flag --bogus\nTry "dsh-bash mcp --help".\n'],
    [['mcp', 'extra'], 'dsh-bash: unexpected argument "extra"\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--help=yes'], 'dsh-bash: --help: takes no value\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--workdir', '/no/such/dir'], 'dsh-bash: --workdir: no such directory "/no/such/dir"\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--executor', 'docker'], 'dsh-bash: --executor: expected one of local, sandbox, ssh, container, kubernetes, got "docker"\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--http', '127.0.0.1:0', '--token', 't'], `dsh-bash: ${TOKEN_FLAG_REFUSED}\nTry "dsh-bash mcp --help".\n`],
    [['mcp', '--token=t'], `dsh-bash: ${TOKEN_FLAG_REFUSED}\nTry "dsh-bash mcp --help".\n`],
    [['mcp', '--token-file', 't'], 'dsh-bash: --token-file: only used with --http\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--idle-timeout', '60'], 'dsh-bash: --idle-timeout: only used with --http\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--nice', '20'], 'dsh-bash: --nice: expected a whole number from -20 to 19, got "20"\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--nice=-21'], 'dsh-bash: --nice: expected a whole number from -20 to 19, got "-21"\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--nice', 'high'], 'dsh-bash: --nice: expected a whole number from -20 to 19, got "high"\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--nice'], 'dsh-bash: --nice: expected a value\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--yield-after', 'soon'], 'dsh-bash: --yield-after: expected a number of seconds (0 = off), got "soon"\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--yield-after=-1'], 'dsh-bash: --yield-after: must not be negative, got -1 (0 = off)\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--yield-after', '-1'], 'dsh-bash: --yield-after: must not be negative, got -1 (0 = off)\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--max-result-bytes', '-5'], 'dsh-bash: --max-result-bytes: must not be negative, got -5 (at least 200)\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--max-result-lines', '1e3'], 'dsh-bash: --max-result-lines: expected a whole number of at least 10, got "1e3"\nTry "dsh-bash mcp --help".\n'],
    [['agent', '--base-url', 'http://127.0.0.1:9/v1', '--model', 'm', '--max-steps', '-2', 'hi'], 'dsh-bash: --max-steps: must not be negative, got -2\nTry "dsh-bash agent --help".\n'],
    [['mcp', '--nice', '-5', '--nice', '3'], 'dsh-bash: --nice: given twice (it takes one value; the command line must say which)\nTry "dsh-bash mcp --help".\n'],
    [['repl', '--executor', 'sandbox', '--executor', 'local'], 'dsh-bash: --executor: given twice (it takes one value; the command line must say which)\nTry "dsh-bash repl --help".\n'],
    [['repl', '--executor=local', '--executor', 'local'], 'dsh-bash: --executor: given twice (it takes one value; the command line must say which)\nTry "dsh-bash repl --help".\n'],
    [['mcp', '--policy', '/tmp'], 'dsh-bash: --policy: "/tmp" is a directory, expected a file\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--executor-config', '@/tmp'], 'dsh-bash: --executor-config: "/tmp" is a directory, expected a file\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--executor', 'ssh', '--workdir', '/srv', '--ssh', 'u@h', '--ssh-key', '/tmp'], 'dsh-bash: --ssh-key: "/tmp" is a directory, expected a file\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--workdri', '/tmp'], 'dsh-bash: unknown flag --workdri (did you mean --workdir?)\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--executor', 'sandbx'], 'dsh-bash: --executor: expected one of local, sandbox, ssh, container, kubernetes, got "sandbx" (did you mean sandbox?)\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--executor', 'sandbox', '--sandbox-mode', 'read-olny'], 'dsh-bash: --sandbox-mode: expected one of read-only, workspace-write, danger-full-access, got "read-olny" (did you mean read-only?)\nTry "dsh-bash mcp --help".\n'],
    [['mpc'], 'dsh-bash: unknown command "mpc" (expected mcp, repl, agent or reply) (did you mean mcp?)\nTry "dsh-bash --help".\n'],
    [['--verison'], 'dsh-bash: unknown flag --verison (did you mean --version?)\nTry "dsh-bash --help".\n'],
    [['repl', '--executor-config', '{"timeoutMs":-1}'], 'dsh-bash: --executor-config: invalid local executor config: timeoutMs must be positive\nTry "dsh-bash repl --help".\n'],
    [['mcp', '--max-result-bytes', '100'], 'dsh-bash: --max-result-bytes: expected a whole number of at least 200, got "100"\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--max-result-lines', '1.5'], 'dsh-bash: --max-result-lines: expected a whole number of at least 10, got "1.5"\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--http', '127.0.0.1:0', '--allow-origin', 'localhost'], 'dsh-bash: --allow-origin: expected an origin like http://localhost:6274, got "localhost"\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--policy', '/no/such/policy.yaml'], 'dsh-bash: --policy: no such file "/no/such/policy.yaml"\nTry "dsh-bash mcp --help".\n'],
    [['repl', '--executor-config', '{bad'], 'dsh-bash: --executor-config: expected a JSON object or @FILE, got "{bad"\nTry "dsh-bash repl --help".\n'],
    [['repl', '--executor-config', '[1]'], 'dsh-bash: --executor-config: expected a JSON object\nTry "dsh-bash repl --help".\n'],
    [['repl', '--http', '127.0.0.1:0'], 'dsh-bash: unknown flag --http\nTry "dsh-bash repl --help".\n'],
    [['mcp', '--sandbox-mode', 'read-only'], 'dsh-bash: --sandbox-mode: only used with --executor sandbox\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--executor', 'sandbox', '--sandbox-mode', 'open'], 'dsh-bash: --sandbox-mode: expected one of read-only, workspace-write, danger-full-access, got "open"\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--executor', 'sandbox', '--network', 'yes'], 'dsh-bash: --network: expected on or off, got "yes"\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--network', 'on'], 'dsh-bash: --network: only used with --executor sandbox\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--ssh', 'u@h'], 'dsh-bash: --ssh: only used with --executor ssh\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--image', 'debian:12'], 'dsh-bash: --image: only used with --executor container or kubernetes\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--engine', 'tcp://127.0.0.1:2375'], 'dsh-bash: --engine: only used with --executor container\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--executor', 'container'], 'dsh-bash: --image: required with --executor container (an image already on the engine: it is never pulled)\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--executor', 'container', '--image', ''], 'dsh-bash: --image: expected a value, got ""\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--namespace', 'ns'], 'dsh-bash: --namespace: only used with --executor kubernetes\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--pod-template', 'pod.yaml'], 'dsh-bash: --pod-template: only used with --executor kubernetes\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--executor', 'container', '--image', 'x', '--namespace', 'ns'], 'dsh-bash: --namespace: only used with --executor kubernetes\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--executor', 'kubernetes', '--image', 'x', '--engine', 'tcp://h:1'], 'dsh-bash: --engine: only used with --executor container\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--executor', 'kubernetes'], 'dsh-bash: --image: required with --executor kubernetes (unless --pod-template names the image)\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--executor', 'kubernetes', '--image', ' '], 'dsh-bash: --image: expected a value, got " "\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--executor', 'kubernetes', '--image', 'x', '--namespace', 'Team_A'], 'dsh-bash: --namespace: expected a Kubernetes namespace name (lower-case letters, digits, -), got "Team_A"\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--executor', 'kubernetes', '--pod-template', ''], 'dsh-bash: --pod-template: expected a value, got ""\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--executor', 'ssh', '--workdir', '/srv'], 'dsh-bash: --ssh: required with --executor ssh (user@host[:port], repeatable)\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--executor', 'ssh', '--workdir', '/srv', '--ssh', 'nouser'], 'dsh-bash: --ssh: expected user@host[:port], got "nouser"\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--executor', 'ssh', '--workdir', '/srv', '--ssh', 'u@h:70000'], 'dsh-bash: --ssh: expected user@host[:port], got "u@h:70000"\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--executor', 'ssh', '--workdir', '/srv', '--ssh', 'u@h', '--ssh-key', '/no/key'], 'dsh-bash: --ssh-key: no such file "/no/key"\nTry "dsh-bash mcp --help".\n'],
    [['mcp', '--executor', 'ssh', '--workdir', '/srv', '--ssh', 'u@h', '--ssh-key', '/etc/hostname', '--known-hosts', '/no/kh'], 'dsh-bash: --known-hosts: no such file "/no/kh" (host keys are never accepted blindly)\nTry "dsh-bash mcp --help".\n'],
    [['reply', '--decline'], 'dsh-bash: --decline: name the question to decline, e.g. dsh-bash reply --decline QUESTION\nTry "dsh-bash reply --help".\n'],
    [['reply', '--list', 'q1'], 'dsh-bash: --list: lists every waiting question; it takes no question and no --decline\nTry "dsh-bash reply --help".\n'],
    [['reply', 'q1', 'q2'], 'dsh-bash: unexpected argument "q2" (one question at a time)\nTry "dsh-bash reply --help".\n'],
    [['reply', '--token', 't'], `dsh-bash: ${TOKEN_FLAG_REFUSED}\nTry "dsh-bash reply --help".\n`],
    [['reply', '--token-file', 't'], 'dsh-bash: --token-file: only used with --url\nTry "dsh-bash reply --help".\n'],
    [['reply', '--url', 'ftp://h/mcp'], 'dsh-bash: --url: expected the server\'s http(s) URL, e.g. http://127.0.0.1:8765/mcp, got "ftp://h/mcp"\nTry "dsh-bash reply --help".\n'],
  ])('%j is a usage error naming the flag or value (exit 2)', (args, message) => {
    expect(run(...args)).toEqual({ code: 2, stdout: '', stderr: message })
  })

  it('reads --executor-config from @FILE', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-cli-'))
    try {
      writeFileSync(join(dir, 'c.json'), '{"maxTimeoutMs": 0}')
      const { code, stderr } = run('repl', '--executor-config', `@${join(dir, 'c.json')}`)
      expect(code).toBe(2)
      expect(stderr).toBe('dsh-bash: --executor-config: invalid local executor config: maxTimeoutMs must be positive\nTry "dsh-bash repl --help".\n')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('a port in use is a runtime failure (exit 1)', async () => {
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    const port = (blocker.address() as { port: number }).port
    try {
      const { code, stderr } = run('mcp', '--http', `127.0.0.1:${port}`)
      expect(code).toBe(1)
      expect(stderr).toMatch(new RegExp(`^dsh-bash: --http: cannot listen on 127\\.0\\.0\\.1:${port}: .*EADDRINUSE`))
    } finally {
      blocker.close()
    }
  })

  const sandboxBuilt = existsSync(join(ROOT, 'packages/bash-sandbox/dist/index.js'))
  // Only meaningful on a checkout where the sandbox package is not built (it always is after npm ci).
  if (!sandboxBuilt) it('an executor package that is not built yet is named in a clear error (exit 1)', () => {
    const { code, stderr } = run('repl', '--executor', 'sandbox')
    expect(code).toBe(1)
    expect(stderr).toMatch(/^dsh-bash: executor "sandbox" is not available: /)
  })
})

describe('argument parsing', () => {
  it('--keep-env NAME adds !NAME to the secret list the executor applies (the defaults, or the config\'s)', () => {
    const patterns = parseReplArgs(['--keep-env', 'GITHUB_TOKEN', '--keep-env', 'NPM_TOKEN']) as { executorConfig: { secretEnvPatterns: string[] } }
    expect(patterns.executorConfig.secretEnvPatterns.slice(-2)).toEqual(['!GITHUB_TOKEN', '!NPM_TOKEN'])
    expect(patterns.executorConfig.secretEnvPatterns).toContain('*_TOKEN')
    const custom = parseReplArgs(['--executor-config', '{"secretEnvPatterns":["*_X"]}', '--keep-env', 'A_X']) as { executorConfig: { secretEnvPatterns: string[] } }
    expect(custom.executorConfig.secretEnvPatterns).toEqual(['*_X', '!A_X'])
    expect(() => parseReplArgs(['--keep-env', 'A B'])).toThrow('--keep-env: expected the name of an environment variable, got "A B"')
  })

  it('parses HOST:PORT, IPv6 in brackets, port 0', () => {
    expect(parseHostPort('127.0.0.1:8080')).toEqual({ host: '127.0.0.1', port: 8080 })
    expect(parseHostPort('localhost:0')).toEqual({ host: 'localhost', port: 0 })
    expect(parseHostPort('[::1]:9000')).toEqual({ host: '::1', port: 9000 })
    for (const bad of ['8080', ':8080', 'host:', 'host:port', '::1:80', 'a b:1', 'h:65536']) {
      expect(() => parseHostPort(bad)).toThrow(UsageError)
    }
  })

  it('gives defaults and resolves the workdir', () => {
    // MCP mode: memory keeps no more per stream than one result may show, and output that would
    // not fit uncut with its markers spills (so that every cut names a file; tool-bash's spillThreshold).
    const { memory, pids } = limitDefaults()
    const bounds = { maxOutputBytes: 10_000, spillAboveBytes: 10_000 - 1024, spillAboveLines: 1_900 - 16 }
    // The local and sandbox executors get the limit defaults (limit-defaults.ts); the others keep their own.
    const localBounds = { ...bounds, limits: { memory, pids } }
    const mcpDefaults = {
      yieldAfterMs: 50_000,
      resultBudget: { bytes: 10_000, lines: 1_900 },
      idleTimeoutMs: 1_800_000,
      toolBash: { yieldAfterMs: 50_000, resultBudget: { bytes: 10_000, lines: 1_900 } },
    }
    expect(parseMcpArgs([])).toEqual({ executor: 'local', executorConfig: { ...localBounds }, allowedOrigins: [], ...mcpDefaults })
    expect(parseMcpArgs(['--http', '0.0.0.0:1', '--token-file', 'token.txt', '--allow-origin', 'http://a.example', '--allow-origin', 'https://b.example:8443'])).toEqual({
      executor: 'local',
      executorConfig: { ...localBounds },
      http: { host: '0.0.0.0', port: 1 },
      tokenFile: resolve('token.txt'),
      allowedOrigins: ['http://a.example', 'https://b.example:8443'],
      ...mcpDefaults,
    })
    // The MCP tuning flags; 0 turns the yield off; an explicit executor memory bound is kept.
    expect(
      parseMcpArgs(['--http', '127.0.0.1:0', '--yield-after', '0', '--max-result-bytes', '4000', '--max-result-lines', '100', '--idle-timeout', '2.5', '--executor-config', '{"maxOutputBytes":64000}']),
    ).toMatchObject({
      yieldAfterMs: 0,
      resultBudget: { bytes: 4000, lines: 100 },
      idleTimeoutMs: 2500,
      executorConfig: { maxOutputBytes: 64000, spillAboveBytes: 4000 - 1024, spillAboveLines: 100 - 16 },
      toolBash: { resultBudget: { bytes: 4000, lines: 100 } },
    })
    // Explicit thresholds are kept; a budget under the reserve spills any output (threshold 0).
    expect(parseMcpArgs(['--executor-config', '{"spillAboveBytes":5,"spillAboveLines":6}']).executorConfig).toEqual({ maxOutputBytes: 10_000, spillAboveBytes: 5, spillAboveLines: 6, limits: { memory, pids } })
    expect(parseMcpArgs(['--max-result-bytes', '200', '--max-result-lines', '10']).executorConfig).toEqual({ maxOutputBytes: 200, spillAboveBytes: 0, spillAboveLines: 0, limits: { memory, pids } })
    // `--nice -5` is the value -5 (not a flag), as `--nice=-5`; absent: left alone.
    expect(parseMcpArgs(['--nice', '-5', '--http', '127.0.0.1:0']).nice).toBe(-5)
    expect(parseMcpArgs(['--nice=-20']).nice).toBe(-20)
    expect(parseMcpArgs(['--nice', '19']).nice).toBe(19)
    expect(parseMcpArgs([]).nice).toBeUndefined()
    expect(parseMcpArgs(['--yield-after', '0']).toolBash).toEqual({ resultBudget: { bytes: 10_000, lines: 1_900 } })
    expect(parseReplArgs(['--workdir', '.', '--executor-config', '{"timeoutMs":5}'])).toEqual({
      executor: 'local',
      executorConfig: { timeoutMs: 5 },
      workdir: process.cwd(),
    })
    // An SSH workspace is a remote path: not checked here.
    expect(parseReplArgs(['--executor', 'ssh', '--workdir', '/remote/only', '--executor-config', '{"hosts":[]}'])).toMatchObject({
      workdir: '/remote/only',
    })
    // The convenience flags become executor config.
    expect(parseMcpArgs(['--executor', 'container', '--image', 'debian:12', '--engine', 'tcp://10.0.0.2:2375']).executorConfig).toEqual({
      image: 'debian:12',
      engine: 'tcp://10.0.0.2:2375',
      ...bounds,
    })
    expect(parseMcpArgs(['--executor', 'container', '--executor-config', '{"image":"from-config"}']).executorConfig).toEqual({
      image: 'from-config',
      ...bounds,
    })
    expect(parseReplArgs(['--executor', 'container', '--image', 'debian:12']).executorConfig).toEqual({ image: 'debian:12' })
    // Kubernetes: the template path is resolved; --workdir (a host directory) maps to the pod's workdir.
    expect(parseMcpArgs(['--executor', 'kubernetes', '--image', 'debian:12', '--namespace', 'evals', '--pod-template', 'pod.yaml', '--workdir', '.']).executorConfig).toEqual({
      image: 'debian:12',
      namespace: 'evals',
      podTemplateFile: join(process.cwd(), 'pod.yaml'),
      workspace: process.cwd(),
      ...bounds,
    })
    expect(parseReplArgs(['--executor', 'kubernetes', '--pod-template', '/t/pod.yaml']).executorConfig).toEqual({ podTemplateFile: '/t/pod.yaml' })
    expect(parseReplArgs(['--executor', 'kubernetes', '--executor-config', '{"podTemplate":{"spec":{}}}']).executorConfig).toEqual({ podTemplate: { spec: {} } })
    expect(parseMcpArgs(['--executor', 'sandbox', '--sandbox-mode', 'read-only', '--network', 'on']).executorConfig).toEqual({
      mode: 'read-only',
      network: true,
      ...bounds,
      limits: { memory, pids, tmp: limitDefaults().tmp },
    })
    const ssh = parseMcpArgs([
      '--executor', 'ssh', '--workdir', '/srv',
      '--ssh', 'alice@build-1', '--ssh', 'bob@[::1]:2222',
      '--ssh-key', '/etc/hostname', '--known-hosts', '/etc/hosts',
    ])
    expect(ssh.executorConfig).toEqual({
      hosts: [
        { username: 'alice', host: 'build-1', port: 22, privateKeyPath: '/etc/hostname', hostKey: { knownHostsPath: '/etc/hosts' } },
        { username: 'bob', host: '::1', port: 2222, privateKeyPath: '/etc/hostname', hostKey: { knownHostsPath: '/etc/hosts' } },
      ],
      ...bounds,
    })
  })
})
