import { symbols } from 'cordis'

/**
 * The service object behind cordis' tracing proxy, or `value` itself when it is not one.
 *
 * Why: every property access through the proxy builds a shadow context and a method proxy, and
 * every `ctx.x` / `ctx.get(x)` builds an `Error` with a stack for cordis' inject warning (profiled
 * under the load bench: the largest single cost of a tool call on the server). Code on a hot path
 * resolves a service once, takes its object with this, and calls it directly.
 *
 * Only for methods that use no caller context (the tool registry's `execute`, an executor's
 * `run`/`readOutput`/…, `agents.create` does use it: keep that one on the proxy). Never keep the
 * object past the lifetime of the plugin that resolved it: resolve it in `apply` (re-run when an
 * injected service changes) or inside an effect that is undone with the plugin.
 *
 * This is the one way around the proxy in this repository: the caller takes the object (tool-bash
 * its `ctx.bash`, the MCP session and host and the agents their `ctx.tools`); services never
 * unwrap themselves, so a caller through the proxy gets the same answers, only slower.
 */
export function serviceObject<T>(value: T): T {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return value
  return ((value as Record<symbol, unknown>)[symbols.original] as T | undefined) ?? value
}
