import { closeSync, existsSync, fstatSync, constants as fsConstants, mkdirSync, openSync, readlinkSync, realpathSync, rmdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { CommandLine, TransformInput, TransformResult } from '@deepseek-ai/dsh-bash-local'
import { bridgeCommand, bwrapArgs, FIRST_PROTECTION_FD, lookupExecutable, openStatusFile, probeBwrap, type ProxyPlan, proxyEnvironment, removeFile } from './bwrap.js'
import { SandboxedCommand } from './command.js'
import { checkRequestedMode, networkKind, type SandboxExecutorConfig, type SandboxModeName } from './config.js'
import { EgressProxy, type ProxyLaunch } from './egress-proxy.js'
import { checkWorkdirReadable, DEFAULT_DENY_READ, readMasks } from './read-masks.js'
import { findGitMetadata, type GitProtection, gitMounts, isWithin } from './git.js'
import { buildSeccompFilter } from './seccomp.js'
import { SeccompProgram } from './seccomp-fd.js'
import { checkWorkdirOutsideTmp, checkWorkdirPrivacy, currentMounts, hiddenPaths, SPILL_IN_WORKSPACE } from './privacy.js'
import { BASH_ERROR } from '@deepseek-ai/dsh-bash'

/** The start of every refusal when the sandbox cannot work on this machine. */
export const UNAVAILABLE_PREFIX = 'the sandbox is unavailable, so no command was run'

export interface SandboxSettings {
  config: SandboxExecutorConfig
  /** Physical path of the workspace root. */
  workspaceRoot: string
  /** The bwrap binary; undefined when none was found. */
  bwrapPath: string | undefined
  /** The home directory `~` stands for in the read masks. */
  home: string
}

/** The network bridge of proxy mode built for this machine (`native/`), or undefined. */
export function bridgeBinary(): string | undefined {
  const path = fileURLToPath(new URL(`../native/dsh-netbridge-linux-${process.arch}`, import.meta.url))
  return existsSync(path) ? path : undefined
}

/**
 * The sandbox as a transform of the command line (`LaunchTransform`): a spec and its bash line in,
 * the bwrap command line, its cleanup and an adapter out, or a typed refusal. It holds no
 * per-launch state except the git guards shared by concurrent commands (below).
 */
export class BwrapSandbox {
  /** Why confined commands are refused; set by `probe`. */
  unavailableReason: string | undefined
  /**
   * The seccomp programs, held in memory (never reopened by a path a command could reach): `off`
   * for the network off and for proxy mode (only the bridge may create Unix sockets), `on` for the
   * host's network.
   */
  private readonly seccomp: { off?: SeccompProgram; on?: SeccompProgram } = {}
  private readonly guards = new GuardRegistry()
  /**
   * The egress proxy: with `network: { allow, deny, hosts }`; with `network: true` too, for the
   * commands of a session that narrows it with lists of its own (`spec.network`).
   */
  readonly proxy?: EgressProxy
  /** The empty file of mode 0000 bound over masked files; made by `probe`. */
  private unreadableFile?: string
  /** GNU env, for interactive commands (see `terminalLine`); looked up at the first one. */
  private envPath?: string | null

  private env(): string | undefined {
    if (this.envPath === undefined) this.envPath = lookupExecutable('env') ?? null
    return this.envPath ?? undefined
  }

  constructor(private readonly settings: SandboxSettings) {
    const network = settings.config.network
    if (typeof network === 'object') {
      this.proxy = new EgressProxy({ rules: { allow: network.allow, deny: network.deny, owner: "the server's" }, hosts: network.hosts })
    } else if (network === true) {
      this.proxy = new EgressProxy({ rules: { allow: [], deny: [], owner: "the server's" }, hosts: {} })
    }
  }

  /** Every path the read masks start from: the default list, the configured additions. */
  get denyRead(): string[] {
    return [...DEFAULT_DENY_READ, ...this.settings.config.denyRead]
  }

  /**
   * Builds the seccomp program (kept by a descriptor, see `SeccompProgram`) and runs bwrap once
   * with the full confinement. Sets `unavailableReason` when the sandbox cannot work here.
   */
  probe(options: { privateDir: string; shellPath: string; containment: string; containmentNote: string }): void {
    const { config, bwrapPath } = this.settings
    this.unavailableReason = this.findReason(options, config, bwrapPath)
  }

  private findReason(
    options: { privateDir: string; shellPath: string; containment: string; containmentNote: string },
    config: SandboxExecutorConfig,
    bwrapPath: string | undefined,
  ): string | undefined {
    if (!bwrapPath) {
      const where = config.bwrapPath === undefined ? 'bwrap was not found in PATH' : `bwrap was not found at ${JSON.stringify(config.bwrapPath)}`
      return `${UNAVAILABLE_PREFIX}: ${where} (install the bubblewrap package, or set bwrapPath)`
    }
    if (options.containment === 'pgroup') {
      return `${UNAVAILABLE_PREFIX}: neither a cgroup nor /proc is available to follow the sandboxed processes (${options.containmentNote})`
    }
    let filter: Buffer
    const unreadable = join(options.privateDir, 'dsh-bash-unreadable')
    try {
      // Proxy mode keeps the network-off filter: only the bridge may create Unix sockets.
      this.seccomp.off = SeccompProgram.create(buildSeccompFilter({ network: false }), options.privateDir)
      filter = buildSeccompFilter({ network: networkKind(config.network) === 'on' })
      if (networkKind(config.network) === 'on') this.seccomp.on = SeccompProgram.create(filter, options.privateDir)
      writeFileSync(unreadable, '', { mode: 0, flag: 'wx' })
      this.unreadableFile = unreadable
    } catch (error) {
      return `${UNAVAILABLE_PREFIX}: ${(error as Error).message}`
    }
    let proxy: ProxyPlan | undefined
    if (networkKind(config.network) === 'proxy') {
      const bridgePath = bridgeBinary()
      if (!bridgePath) return `${UNAVAILABLE_PREFIX}: egress by domain needs the network bridge, which is not built for ${process.platform}-${process.arch} (native/dsh-netbridge-linux-<arch>)`
      // The probe's bridge never connects: any file stands in for the socket.
      proxy = { bridgePath, socketPath: unreadable, env: {} }
    }
    const seccomp = this.seccomp.on ?? this.seccomp.off
    const reason = probeBwrap({
      bwrapPath,
      shellPath: options.shellPath,
      network: networkKind(config.network) === 'on',
      statusPath: join(options.privateDir, 'dsh-bash-probe-bwrap.json'),
      openFilter: () => seccomp.open(),
      ...(proxy ? { proxy } : {}),
    })
    return reason ? `${UNAVAILABLE_PREFIX}: ${reason}` : undefined
  }

  /** Lets the seccomp program go (the executor's disposal, once no command runs). */
  release(): void {
    this.seccomp.off?.release()
    this.seccomp.on?.release()
    this.proxy?.close()
  }

  /** The transform (bound: pass it as the local executor's `LaunchTransform`). */
  readonly transform = (input: TransformInput): TransformResult => {
    const { spec, label, line, privateDir, ownerDir, executorDirs } = input
    let mode: SandboxModeName
    try {
      // Resolved once, by `resolve`; a hand-made spec with a bad mode is refused all the same.
      mode = checkRequestedMode(spec.sandboxMode)
    } catch (error) {
      return { kind: 'refused', reason: (error as Error).message, code: BASH_ERROR.sandboxUnavailable }
    }
    if (mode === 'danger-full-access') {
      return { kind: 'launch', line, cleanup: [], adapt: (launched) => new SandboxedCommand(launched, mode) }
    }
    if (this.unavailableReason) return { kind: 'refused', reason: this.unavailableReason, code: BASH_ERROR.sandboxUnavailable }
    const { config, workspaceRoot, bwrapPath } = this.settings
    const cleanup: Array<() => void> = []
    const fds: number[] = []
    try {
      // Where the executor's own directories can be seen (mounts may have changed since the start).
      const mounts = currentMounts()
      const hidden = hiddenPaths(executorDirs, mounts)
      const inWorkspace = mode === 'workspace-write' ? hidden.find((path) => isWithin(path, workspaceRoot)) : undefined
      if (inWorkspace !== undefined) throw new Error(`${SPILL_IN_WORKSPACE}, so no command was run: ${inWorkspace} (workspace root ${workspaceRoot})`)
      const workdirReal = realpathSync(spec.workdir)
      checkWorkdirPrivacy(spec.workdir, workdirReal, hidden)
      checkWorkdirOutsideTmp(spec.workdir, workdirReal, workspaceRoot)
      // The secrets: masked where the command could otherwise see them (not under the private /tmp
      // or a hidden directory, which show nothing of the host's already).
      const masks = readMasks({
        deny: this.denyRead,
        allow: config.allowRead,
        home: this.settings.home,
        mounts,
        skip: (path) => (isWithin(path, '/tmp') && !isWithin(path, workspaceRoot)) || hidden.some((dir) => isWithin(path, dir)),
      })
      checkWorkdirReadable(spec.workdir, workdirReal, masks)
      // The network of this launch: the configured one, unless a session's lists narrow the host's
      // network down to the proxy's (with the network off, there is nothing to narrow).
      const configured = networkKind(config.network)
      const network = configured === 'on' && spec.network !== undefined ? 'proxy' : configured
      const bridgePath = network === 'proxy' ? bridgeBinary() : undefined
      if (network === 'proxy' && !bridgePath) throw new Error(`egress by domain needs the network bridge, which is not built for ${process.platform}-${process.arch}`)
      const statusPath = join(privateDir, `dsh-bash-${label}-bwrap.json`)
      // Handed to bwrap as fd 3 (`--json-status-fd 3`), fd 4 (`--seccomp 4`), then the protections.
      fds.push(openStatusFile(statusPath))
      cleanup.push(() => removeFile(statusPath))
      fds.push((network === 'on' ? this.seccomp.on : this.seccomp.off)!.open())
      let protections: GitProtection[] = []
      if (mode === 'workspace-write') {
        const git = findGitMetadata(workspaceRoot)
        const guarded = this.guards.acquire(workspaceRoot, git.missing, git.readOnly)
        cleanup.push(() => this.guards.release(guarded))
        protections = gitMounts(workspaceRoot, [...new Set([...git.readOnly, ...guarded])]).map((protection) => {
          fds.push(openChecked(protection.path))
          // extraFds become fd 3, 4, … in bwrap: this one is the last so far.
          return { ...protection, fd: FIRST_PROTECTION_FD + fds.length - 3 }
        })
      }
      let proxy: ProxyPlan | undefined
      let launch: ProxyLaunch | undefined
      if (network === 'proxy' && this.proxy) {
        const socketPath = join(privateDir, `dsh-bash-${label}-proxy.sock`)
        const session = spec.network ? [{ allow: spec.network.allow ?? [], deny: spec.network.deny ?? [], owner: "the session's" }] : []
        launch = this.proxy.listen(socketPath, session)
        const opened = launch
        cleanup.push(() => opened.close())
        proxy = { bridgePath: bridgePath!, socketPath, env: proxyEnvironment({ ...process.env, ...spec.env }) }
      }
      const args = bwrapArgs({
        mode,
        network: network === 'on',
        workspaceRoot,
        protections,
        workdir: spec.workdir,
        hidden,
        // The owner's directory (its full outputs, long scripts), inside a hidden one: readable.
        // Only this owner's: other sessions' spill files stay hidden.
        readOnlyExtras: [realpathSync(ownerDir)],
        ...(spec.interactive ? { terminal: true } : {}),
        masks,
        ...(this.unreadableFile ? { unreadableFile: this.unreadableFile } : {}),
        ...(config.limits.tmp !== undefined ? { tmpBytes: config.limits.tmp } : {}),
        ...(proxy ? { proxy } : {}),
      })
      // In proxy mode the bridge starts the command (and applies its seccomp program).
      const prefix = proxy ? bridgeCommand() : []
      const reads = { masks, workdir: workdirReal, home: this.settings.home }
      return {
        kind: 'launch',
        line: spec.interactive
          ? terminalLine(this.env(), bwrapPath!, args, prefix, line, fds)
          : { file: bwrapPath!, args: [...args, '--', ...prefix, line.file, ...line.args], joinsThroughBashEnv: false, monitor: true, extraFds: fds },
        cleanup,
        adapt: (launched) => new SandboxedCommand(launched, mode, statusPath, reads, launch),
      }
    } catch (error) {
      // Nothing is started: undo what was set up, and refuse with the reason.
      for (const fd of fds) closeQuietly(fd)
      for (const undo of cleanup.reverse()) undo()
      // A refused workdir keeps its own code (an invalid request); everything else is the sandbox's.
      const code = (error as { code?: unknown }).code === BASH_ERROR.invalidRequest ? BASH_ERROR.invalidRequest : BASH_ERROR.sandboxUnavailable
      return { kind: 'refused', reason: (error as Error).message, code }
    }
  }
}

/**
 * Opens a path to protect, for `--bind-fd`: without following a final symbolic link, without
 * blocking on a FIFO, and checks that the descriptor is the directory or file at exactly `path`
 * (no symbolic link on the way, which a running command may have swapped in since the scan).
 */
function openChecked(path: string): number {
  let fd: number
  try {
    fd = openSync(path, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK)
  } catch (error) {
    throw new Error(`${CHANGED}: ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
  }
  try {
    const stat = fstatSync(fd)
    if (!stat.isDirectory() && !stat.isFile()) throw new Error(`${CHANGED}: ${path} is neither a directory nor a file`)
    const opened = readlinkSync(`/proc/self/fd/${fd}`)
    if (opened !== path) throw new Error(`${CHANGED}: ${path} leads to ${opened}`)
    return fd
  } catch (error) {
    closeQuietly(fd)
    throw error
  }
}

/** The start of the error when a protected path moved between the scan and the launch. */
const CHANGED = 'the workspace\'s git metadata changed while the sandbox was being set up, so no command was run'

function closeQuietly(fd: number): void {
  try {
    closeSync(fd)
  } catch {
    // Already closed.
  }
}

/**
 * The empty read-only directories put where a `.git` is missing, shared by the commands running
 * at the same time. The first command that needs one creates it (and any missing parent) on the
 * host as a mount point; the last one to end removes what was created, if still empty. Removing it
 * earlier would detach the mount inside the sandboxes still running (Linux lazily unmounts a
 * removed mount point in every namespace), and they could then create the `.git`.
 */
class GuardRegistry {
  private readonly held = new Map<string, { count: number; created: string[] }>()

  /**
   * Creates (or shares) the guards for the `missing` paths, and shares the guards among the
   * `existing` ones (a guard created for a running command looks like an existing `.git`). Returns
   * the paths now guarded: release them when the command is over.
   */
  acquire(root: string, missing: string[], existing: string[]): string[] {
    const taken: string[] = []
    for (const path of existing) {
      const entry = this.held.get(path)
      if (entry) {
        entry.count++
        taken.push(path)
      }
    }
    try {
      for (const path of missing) {
        const entry = this.held.get(path)
        if (entry) {
          entry.count++
          taken.push(path)
          continue
        }
        const created = createDirectories(path, root)
        if (created === undefined) continue
        // Created by someone else meanwhile, it is an existing path all the same: bound read-only as found.
        if (created.length > 0) this.held.set(path, { count: 1, created })
        taken.push(path)
      }
    } catch (error) {
      this.release(taken)
      throw error
    }
    return taken
  }

  release(paths: string[]): void {
    for (const path of paths) {
      const entry = this.held.get(path)
      if (!entry || --entry.count > 0) continue
      this.held.delete(path)
      for (const dir of [...entry.created].reverse()) {
        try {
          rmdirSync(dir)
        } catch {
          // Not empty (a file appeared once the guard was gone) or gone: leave it.
          break
        }
      }
    }
  }
}

/**
 * `mkdir -p` below `root`: returns the directories it created, shallowest first (empty when `path`
 * existed); undefined, creating nothing, when `root` itself is gone (bwrap then fails on its bind).
 */
function createDirectories(path: string, root: string): string[] | undefined {
  const chain: string[] = []
  for (let dir = path; !existsSync(dir); dir = dirname(dir)) {
    if (dir === root || dirname(dir) === dir) return undefined
    chain.unshift(dir)
  }
  const created: string[] = []
  try {
    for (const dir of chain) {
      try {
        mkdirSync(dir, { mode: 0o755 })
        created.push(dir)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      }
    }
  } catch (error) {
    for (const dir of created.reverse()) rmdirSync(dir)
    throw error
  }
  return created
}

/**
 * The command line of an interactive command: bwrap keeps the terminal as the command's
 * controlling terminal (no `--new-session`, see `BwrapPlan.terminal`), so the terminal's signals
 * (Ctrl-C, Ctrl-\\, Ctrl-Z) go to the whole foreground group, bwrap's monitors included: they
 * ignore them (`env --ignore-signal`, inherited by both bwrap processes, which forward nothing),
 * and the command gets the default handling back (`env --default-signal`), so that a Ctrl-C reaches
 * the program (python's KeyboardInterrupt) instead of ending the sandbox.
 */
function terminalLine(envPath: string | undefined, bwrapPath: string, args: string[], prefix: string[], line: CommandLine, fds: number[]): CommandLine {
  if (!envPath) throw new Error('interactive commands in the sandbox need the env program (GNU coreutils 8.31 or later), which was not found')
  const signals = 'INT,QUIT,TSTP'
  return {
    file: envPath,
    args: [`--ignore-signal=${signals}`, bwrapPath, ...args, '--', ...prefix, envPath, `--default-signal=${signals}`, line.file, ...line.args],
    joinsThroughBashEnv: false,
    monitor: true,
    extraFds: fds,
  }
}
