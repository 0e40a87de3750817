/** The stable messages of this package, in one place. */
export const engineErrors = {
  badUrl: (url: string) => `invalid engine URL ${JSON.stringify(url)}: expected unix:///path/to/socket, tcp://host:port, https://host:port or ssh://[user@]host[:port]`,
  unsupportedUrl: (url: string) =>
    `engine URL ${JSON.stringify(url)} is not supported: use unix:///path/to/socket, tcp://host:port (TLS by DOCKER_TLS_VERIFY/DOCKER_CERT_PATH or the tls setting), https://host:port or ssh://[user@]host[:port]`,
  ssh: (code: number | null, why: string) => `ssh to the engine exited with ${code ?? 'a signal'}${why ? `: ${why}` : ''}`,
  tlsFile: (path: string, why: string) => `cannot read the engine TLS file ${path}: ${why}`,
  unreachable: (url: string, why: string) => `cannot reach the container engine at ${url}: ${why}`,
  timeout: (url: string, call: string) => `the container engine at ${url} did not answer ${call} in time`,
}

export const containerErrors = {
  noImage: (image: string) => `image ${JSON.stringify(image)} is not on the engine (the container executor never pulls: load or build it first)`,
  createFailed: (why: string) => `cannot create the session container: ${why}`,
  agentFailed: (why: string) => `the agent inside the session container did not start: ${why}`,
  lost: (container: string) => `the session container ${container} stopped while the command ran`,
  nulInCommand: () => 'invalid command: contains a NUL byte',
  nulInWorkdir: () => 'invalid workdir: contains a NUL byte',
  nulInEnv: (name: string) => `invalid env: ${name} contains a NUL byte`,
  workdirMissing: (path: string) => `workdir does not exist: ${path}`,
  workdirNotDir: (path: string) => `workdir is not a directory: ${path}`,
  workdirNoAccess: (path: string) => `workdir is not accessible: ${path}`,
  spawn: (why: string) => `cannot start the command in the container: ${why}`,
}
