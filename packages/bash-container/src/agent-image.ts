import { Readable } from 'node:stream'
import { type AgentBinary, agentArchOf, agentBinary, agentErrors, containerAgentArchive, containerAgentPath } from '@deepseek-ai/dsh-bash-agent'
import { messageOf } from '@deepseek-ai/dsh-bash'
import { EngineError, type EngineClient } from './engine.js'
import { containerErrors } from './errors.js'

/** The repository of the images that carry the agent (`dsh-bash-agent:<agent sha>-<image id>`). */
export const AGENT_IMAGE_REPOSITORY = 'dsh-bash-agent'
/** The label of those images: the SHA-256 of the agent build they carry. */
export const LABEL_AGENT = 'dsh-bash.agent'

/** An image the sessions are created from, with the agent in it. */
export interface AgentImage {
  /** `dsh-bash-agent:<agent sha, 16>-<base image id, 16>`: the configured image plus one layer. */
  image: string
  agent: AgentBinary
}

/**
 * The configured image with the agent added as one layer, made once per image and agent version
 * and kept on the engine: the first session ever pays one archive upload (`PUT
 * /containers/{id}/archive` into a created helper container, then `POST /commit`); every later
 * session of any server finds the image by its name and pays nothing. (An upload per session
 * cost the first call ~0.5 s more at this machine's load: dockerd re-executes itself to unpack
 * every archive.) The base image is looked up by id, so a retagged image gets a layer of its own.
 * The helper container carries `labels` (the executor's own, for the sweep; the image keeps them,
 * and every session overrides them with its own) and is removed at once.
 */
export async function agentImage(engine: EngineClient, image: string, labels: Record<string, string>): Promise<AgentImage> {
  let base: { Id: string; Architecture?: string }
  try {
    base = await engine.request('GET', `/images/${encodeURIComponent(image)}/json`)
  } catch (error) {
    if (error instanceof EngineError && error.status === 404) throw containerErrors.noImage(image)
    throw error
  }
  const arch = agentArchOf(base.Architecture ?? '')
  if (!arch) throw agentErrors.noBinary(base.Architecture || 'an unknown architecture')
  const agent = agentBinary(arch)
  const tag = `${agent.sha256.slice(0, 16)}-${base.Id.replace(/^sha256:/, '').slice(0, 16)}`
  const derived = `${AGENT_IMAGE_REPOSITORY}:${tag}`
  try {
    await engine.request('GET', `/images/${encodeURIComponent(derived)}/json`)
    return { image: derived, agent }
  } catch (error) {
    if (!(error instanceof EngineError && error.status === 404)) throw error
  }
  const helper = await engine.request<{ Id: string }>('POST', '/containers/create', {
    Image: base.Id,
    Entrypoint: [containerAgentPath(agent), 'init'],
    Cmd: [],
    Labels: labels,
    NetworkDisabled: true,
    HostConfig: { NetworkMode: 'none' },
  })
  try {
    await engine.putArchive(helper.Id, '/', Readable.from([containerAgentArchive(agent)]))
    // Two servers deriving at once commit the same content under the same name: either wins.
    const query = `container=${helper.Id}&repo=${AGENT_IMAGE_REPOSITORY}&tag=${tag}&pause=false`
    await engine.request('POST', `/commit?${query}`, { Labels: { [LABEL_AGENT]: agent.sha256 } })
  } catch (error) {
    throw containerErrors.createFailed(`cannot add the agent to the image ${image}: ${messageOf(error)}`)
  } finally {
    await engine.request('DELETE', `/containers/${helper.Id}?force=1&v=1`).catch(() => undefined)
  }
  return { image: derived, agent }
}
