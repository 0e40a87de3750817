/**
 * A fake Kubernetes API server for the contract test: just what the executor uses, served over
 * node:http + ws, and backed by a REAL Docker container per pod (the exec is a real `docker exec`
 * attached over the Engine API). The real `@kubernetes/client-node` drives it.
 *
 *   POST   /api/v1/namespaces/{ns}/pods                      create (→ docker create + start)
 *   GET    /api/v1/namespaces/{ns}/pods/{name}               read (status from docker inspect)
 *   DELETE /api/v1/namespaces/{ns}/pods/{name}               delete (→ docker rm -f)
 *   GET    /api/v1/namespaces/{ns}/pods?labelSelector=a=b   list (equality selectors only)
 *   POST   /apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies   create (stored only)
 *   GET    /api/v1/namespaces/{ns}/pods/{name}/exec?command=…  WebSocket, v5/v4.channel.k8s.io:
 *          channel 0 stdin, 1 stdout, 2 stderr, 3 status (a V1Status with the exit code), 4 resize,
 *          255 close (v5: `[255, 0]` closes stdin)
 *
 * Like the API server it checks what it can check offline: a bearer token on every request, DNS
 * names, label syntax (a `/` in a label value is refused, as a real server refuses it), conflicts,
 * 404 Status bodies. It does not model networking (every pod container has no network), quotas,
 * scheduling or service accounts (stored only).
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { EngineClient, EngineError, type EngineStream } from '@deepseek-ai/dsh-bash-container'
import { WebSocketServer } from 'ws'

/** A label every container of a fake server carries (the tests look them up by it). */
export const FAKE_LABEL = 'dsh-bash.fake-apiserver'

interface FakePod {
  pod: Record<string, any>
  containerId?: string
  createError?: string
  deleted?: boolean
}

export interface FakeApiServer {
  /** `http://127.0.0.1:<port>`. */
  url: string
  /** A kubeconfig file naming this server (context `fake`, namespace `default`, a bearer token). */
  kubeconfigPath: string
  /** The `FAKE_LABEL` value of this server's containers. */
  id: string
  pods: Map<string, FakePod>
  networkPolicies: Map<string, Record<string, any>>
  /** Exec WebSockets accepted, by protocol. */
  execs: Array<{ protocol: string; command: string[] }>
  /** Deletes every container it created and stops. */
  close(): Promise<void>
}

const TOKEN = 'fake-token'
const DNS_1123 = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/

export async function startFakeApiServer(options: { engineUrl: string; extraLabels?: Record<string, string> }): Promise<FakeApiServer> {
  const engine = new EngineClient(options.engineUrl)
  const id = randomBytes(4).toString('hex')
  const pods = new Map<string, FakePod>()
  const networkPolicies = new Map<string, Record<string, any>>()
  const execs: FakeApiServer['execs'] = []
  const sockets = new Set<Socket>()
  const streams = new Set<EngineStream>()

  const server = http.createServer({ maxHeaderSize: 1 << 20 }, (req, res) => {
    void handle(req, res).catch((error) => send(res, 500, status(500, 'InternalError', String(error?.message ?? error))))
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: 1 << 30,
    handleProtocols: (protocols: Set<string>) => (protocols.has('v5.channel.k8s.io') ? 'v5.channel.k8s.io' : protocols.has('v4.channel.k8s.io') ? 'v4.channel.k8s.io' : false),
  })

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (req.headers.authorization !== `Bearer ${TOKEN}`) return send(res, 401, status(401, 'Unauthorized', 'Unauthorized'))
    const url = new URL(req.url ?? '/', 'http://fake')
    const body = await readBody(req)
    let m = /^\/api\/v1\/namespaces\/([^/]+)\/pods$/.exec(url.pathname)
    if (m && req.method === 'POST') return createPod(m[1], body, res)
    if (m && req.method === 'GET') return listPods(m[1], url.searchParams.get('labelSelector') ?? '', res)
    m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)$/.exec(url.pathname)
    if (m && req.method === 'GET') {
      const entry = pods.get(`${m[1]}/${m[2]}`)
      if (!entry || entry.deleted) return send(res, 404, notFound(m[2]))
      return send(res, 200, await withStatus(entry))
    }
    if (m && req.method === 'DELETE') return deletePod(m[1], m[2], res)
    m = /^\/apis\/networking\.k8s\.io\/v1\/namespaces\/([^/]+)\/networkpolicies$/.exec(url.pathname)
    if (m && req.method === 'POST') {
      const name = body?.metadata?.name
      if (typeof name !== 'string' || !DNS_1123.test(name)) return send(res, 422, status(422, 'Invalid', 'metadata.name: Invalid value'))
      const key = `${m[1]}/${name}`
      if (networkPolicies.has(key)) return send(res, 409, status(409, 'AlreadyExists', `networkpolicies.networking.k8s.io "${name}" already exists`))
      networkPolicies.set(key, body)
      return send(res, 201, body)
    }
    send(res, 404, status(404, 'NotFound', `the server could not find the requested resource (${req.method} ${url.pathname})`))
  }

  async function createPod(namespace: string, pod: any, res: http.ServerResponse): Promise<void> {
    const name = pod?.metadata?.name
    if (typeof name !== 'string' || !DNS_1123.test(name) || name.length > 63) return send(res, 422, status(422, 'Invalid', `Pod "${name}" is invalid: metadata.name`))
    for (const [key, value] of Object.entries<string>(pod.metadata.labels ?? {})) {
      if (typeof value !== 'string' || value.length > 63 || !LABEL_VALUE.test(value)) {
        return send(res, 422, status(422, 'Invalid', `Pod "${name}" is invalid: metadata.labels: Invalid value: "${value}" (label ${key})`))
      }
    }
    const containers = pod.spec?.containers
    if (!Array.isArray(containers) || containers.length !== 1 || !containers[0].image) {
      return send(res, 422, status(422, 'Invalid', `Pod "${name}" is invalid: the fake serves exactly one container with an image`))
    }
    const key = `${namespace}/${name}`
    if (pods.has(key) && !pods.get(key)!.deleted) return send(res, 409, status(409, 'AlreadyExists', `pods "${name}" already exists`))
    pod.metadata.namespace = namespace
    pod.metadata.uid = randomBytes(8).toString('hex')
    pod.metadata.creationTimestamp = new Date().toISOString()
    pod.status = { phase: 'Pending' }
    const entry: FakePod = { pod }
    pods.set(key, entry)
    send(res, 201, pod)
    // Like a kubelet: the container starts after the API has answered.
    void startContainer(entry, namespace)
  }

  async function startContainer(entry: FakePod, namespace: string): Promise<void> {
    const spec = entry.pod.spec
    const c = spec.containers[0]
    const security = c.securityContext ?? {}
    const hostConfig: Record<string, unknown> = { NetworkMode: 'none', Init: false, CapDrop: security.capabilities?.drop ?? [], CapAdd: security.capabilities?.add ?? [] }
    if (security.allowPrivilegeEscalation === false) hostConfig.SecurityOpt = ['no-new-privileges']
    const memory = quantity(c.resources?.limits?.memory)
    if (memory) Object.assign(hostConfig, { Memory: memory, MemorySwap: memory })
    const cpu = quantity(c.resources?.limits?.cpu)
    if (cpu) hostConfig.NanoCpus = Math.round(cpu * 1e9)
    const tmpfs: Record<string, string> = {}
    for (const mount of c.volumeMounts ?? []) {
      const volume = (spec.volumes ?? []).find((v: any) => v.name === mount.name)
      if (volume?.emptyDir) tmpfs[mount.mountPath] = `${mount.readOnly ? 'ro' : 'rw'},exec,mode=1777`
    }
    hostConfig.Tmpfs = tmpfs
    const user = security.runAsUser ?? spec.securityContext?.runAsUser
    try {
      const created = await engine.request<{ Id: string }>('POST', `/containers/create?name=fake-k8s-${id}-${entry.pod.metadata.name}`, {
        Image: c.image,
        Entrypoint: c.command,
        Cmd: c.args ?? [],
        Env: (c.env ?? []).map((e: any) => `${e.name}=${e.value ?? ''}`),
        Labels: { ...(options.extraLabels ?? {}), [FAKE_LABEL]: id, 'fake-k8s.pod': `${namespace}.${entry.pod.metadata.name}` },
        WorkingDir: c.workingDir ?? '',
        ...(user !== undefined ? { User: String(user) } : {}),
        HostConfig: hostConfig,
      })
      entry.containerId = created.Id
      if (entry.deleted) return void (await removeContainer(entry))
      await engine.request('POST', `/containers/${created.Id}/start`)
    } catch (error) {
      entry.createError = error instanceof EngineError && error.status === 404 ? 'ErrImagePull' : 'CreateContainerError'
      entry.pod.status = { phase: 'Pending', message: String((error as Error).message) }
    }
  }

  async function withStatus(entry: FakePod): Promise<Record<string, any>> {
    const name = entry.pod.spec.containers[0].name
    if (entry.createError) {
      entry.pod.status = { ...entry.pod.status, containerStatuses: [{ name, ready: false, state: { waiting: { reason: entry.createError, message: entry.pod.status.message } } }] }
      return entry.pod
    }
    if (!entry.containerId) return entry.pod
    try {
      const info = await engine.request<any>('GET', `/containers/${entry.containerId}/json`)
      const s = info.State
      if (s.Running) {
        entry.pod.status = { phase: 'Running', containerStatuses: [{ name, ready: true, state: { running: { startedAt: s.StartedAt } } }] }
      } else if (s.Status === 'exited' || s.Status === 'dead') {
        entry.pod.status = {
          phase: s.ExitCode === 0 ? 'Succeeded' : 'Failed',
          containerStatuses: [{ name, ready: false, state: { terminated: { exitCode: s.ExitCode, reason: s.OOMKilled ? 'OOMKilled' : 'Error' } } }],
        }
      } else {
        entry.pod.status = { phase: 'Pending', containerStatuses: [{ name, ready: false, state: { waiting: { reason: 'ContainerCreating' } } }] }
      }
    } catch (error) {
      if (error instanceof EngineError && error.status === 404) entry.pod.status = { phase: 'Failed', message: 'the container is gone' }
      else throw error
    }
    return entry.pod
  }

  async function listPods(namespace: string, selector: string, res: http.ServerResponse): Promise<void> {
    const wanted: Array<[string, string]> = []
    for (const term of selector.split(',').filter(Boolean)) {
      const eq = /^([^=!]+)==?([^=]*)$/.exec(term)
      if (!eq) return send(res, 400, status(400, 'BadRequest', `the fake supports equality selectors only: ${term}`))
      wanted.push([eq[1], eq[2]])
    }
    const items = []
    for (const [key, entry] of pods) {
      if (entry.deleted || !key.startsWith(`${namespace}/`)) continue
      const labels = entry.pod.metadata.labels ?? {}
      if (wanted.every(([k, v]) => labels[k] === v)) items.push(await withStatus(entry))
    }
    send(res, 200, { apiVersion: 'v1', kind: 'PodList', metadata: {}, items })
  }

  async function deletePod(namespace: string, name: string, res: http.ServerResponse): Promise<void> {
    const key = `${namespace}/${name}`
    const entry = pods.get(key)
    if (!entry || entry.deleted) return send(res, 404, notFound(name))
    entry.deleted = true
    await removeContainer(entry)
    pods.delete(key)
    send(res, 200, entry.pod)
  }

  async function removeContainer(entry: FakePod): Promise<void> {
    if (!entry.containerId) return
    try {
      await engine.request('DELETE', `/containers/${entry.containerId}?force=1&v=1`)
    } catch (error) {
      if (!(error instanceof EngineError && (error.status === 404 || error.status === 409))) throw error
    }
  }

  server.on('upgrade', (req: http.IncomingMessage, socket: Socket, head: Buffer) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://fake')
      const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/exec$/.exec(url.pathname)
      if (req.headers.authorization !== `Bearer ${TOKEN}`) return refuse(socket, 401, 'Unauthorized')
      if (!m) return refuse(socket, 404, 'not found')
      const entry = pods.get(`${m[1]}/${m[2]}`)
      if (!entry || entry.deleted || !entry.containerId) return refuse(socket, 404, `pods "${m[2]}" not found`)
      const container = url.searchParams.get('container')
      if (container && container !== entry.pod.spec.containers[0].name) return refuse(socket, 400, `container ${container} is not valid for pod ${m[2]}`)
      const command = url.searchParams.getAll('command')
      const wantStdin = url.searchParams.get('stdin') === 'true'
      if (command.length === 0) return refuse(socket, 400, 'you must specify at least one command')
      let exec: { Id: string }
      try {
        exec = await engine.request<{ Id: string }>('POST', `/containers/${entry.containerId}/exec`, {
          AttachStdin: wantStdin,
          AttachStdout: true,
          AttachStderr: true,
          Tty: false,
          Cmd: command,
        })
      } catch (error) {
        return refuse(socket, 500, String((error as Error).message))
      }
      wss.handleUpgrade(req, socket, head, (ws) => {
        execs.push({ protocol: ws.protocol, command })
        void pipeExec(ws, exec.Id, wantStdin)
      })
    })()
  })

  async function pipeExec(ws: import('ws').WebSocket, execId: string, wantStdin: boolean): Promise<void> {
    // Listening from the first instant: what the client sends while the engine's stream is being
    // attached is kept (a kubelet reads from a connection, nothing is lost either).
    const early: Buffer[] = []
    let onMessage = (data: Buffer) => void early.push(data)
    let onClose = () => {}
    let closedEarly = false
    ws.on('message', (data: Buffer) => onMessage(data))
    ws.on('close', () => {
      closedEarly = true
      onClose()
    })
    let stream: EngineStream
    try {
      stream = await engine.hijack(`/exec/${execId}/start`, { Detach: false, Tty: false })
    } catch (error) {
      ws.send(Buffer.concat([Buffer.from([3]), Buffer.from(JSON.stringify(status(500, 'InternalError', String((error as Error).message))))]))
      ws.close()
      return
    }
    streams.add(stream)
    const v5 = ws.protocol === 'v5.channel.k8s.io'
    onMessage = (data: Buffer) => {
      if (data.length === 0) return
      const channel = data[0]
      if (channel === 0 && wantStdin) stream.stdin.write(data.subarray(1))
      else if (channel === 255 && v5 && data[1] === 0) stream.stdin.end()
      // 4 (resize): no TTY here.
    }
    for (const data of early.splice(0)) onMessage(data)
    // The client went away: the exec's stdin closes (as the kubelet closes it); the process goes on
    // unless it reads stdin — there is no API to signal it.
    onClose = () => {
      stream.stdin.end()
      setTimeout(() => stream.destroy(), 2000).unref()
    }
    if (closedEarly) onClose()
    ws.on('error', () => {})
    const ended = (s: NodeJS.ReadableStream) => new Promise<void>((resolve) => s.once('end', () => resolve()))
    const done = Promise.all([ended(stream.stdout), ended(stream.stderr)])
    stream.stdout.on('data', (chunk: Buffer) => ws.send(Buffer.concat([Buffer.from([1]), chunk])))
    stream.stderr.on('data', (chunk: Buffer) => ws.send(Buffer.concat([Buffer.from([2]), chunk])))
    await done
    await stream.closed
    streams.delete(stream)
    if (ws.readyState !== ws.OPEN) return
    let code = -1
    try {
      code = (await engine.request<{ ExitCode: number | null }>('GET', `/exec/${execId}/json`)).ExitCode ?? -1
    } catch {
      // The container is gone.
    }
    const result =
      code === 0
        ? { metadata: {}, status: 'Success' }
        : {
            metadata: {},
            status: 'Failure',
            message: `command terminated with non-zero exit code: exit status ${code}`,
            reason: 'NonZeroExitCode',
            details: { causes: [{ reason: 'ExitCode', message: String(code) }] },
          }
    ws.send(Buffer.concat([Buffer.from([3]), Buffer.from(JSON.stringify(result))]))
    ws.close(1000)
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const dir = mkdtempSync(join(tmpdir(), 'dsh-fake-kube-'))
  const kubeconfigPath = join(dir, 'kubeconfig')
  writeFileSync(
    kubeconfigPath,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      // Plain HTTP: the client refuses http:// unless TLS verification is declared off.
      clusters: [{ name: 'fake', cluster: { server: url, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'fake', user: { token: TOKEN } }],
      contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'fake', namespace: 'default' } }],
      'current-context': 'fake',
    }),
  )
  return {
    url,
    kubeconfigPath,
    id,
    pods,
    networkPolicies,
    execs,
    async close() {
      for (const entry of pods.values()) {
        entry.deleted = true
        await removeContainer(entry).catch(() => {})
      }
      pods.clear()
      for (const stream of streams) stream.destroy()
      for (const client of wss.clients) client.terminate()
      wss.close()
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      engine.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

function send(res: http.ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body)
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
  res.end(text)
}

function refuse(socket: Socket, code: number, message: string): void {
  const text = JSON.stringify(status(code, 'Failure', message))
  socket.end(`HTTP/1.1 ${code} ${http.STATUS_CODES[code]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`)
}

function status(code: number, reason: string, message: string) {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code }
}

function notFound(name: string) {
  return { ...status(404, 'NotFound', `pods "${name}" not found`), details: { name, kind: 'pods' } }
}

async function readBody(req: http.IncomingMessage): Promise<any> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  const text = Buffer.concat(chunks).toString('utf8')
  if (text.trim() === '') return undefined
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** A Kubernetes quantity (`2Gi`, `512Mi`, `500m`, `2`) as a number (bytes, CPUs). */
export function quantity(value: unknown): number | undefined {
  if (typeof value !== 'string' && typeof value !== 'number') return undefined
  const m = /^(\d+(?:\.\d+)?)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/.exec(String(value))
  if (!m) return undefined
  const factor: Record<string, number> = { m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4 }
  return Number(m[1]) * (m[2] ? factor[m[2]] : 1)
}
