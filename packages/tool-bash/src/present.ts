import type { Presentation, ToolResult } from '@deepseek-ai/dsh-tools'

/** Pure presenters for UIs. They never throw, whatever shape of arguments they get. */

function field(args: unknown, key: string): string | undefined {
  if (!args || typeof args !== 'object') return undefined
  const value = (args as Record<string, unknown>)[key]
  return typeof value === 'string' ? value : undefined
}

function resultText(result: ToolResult | undefined): string {
  if (!result || !Array.isArray(result.content)) return ''
  return result.content.map((block) => (block && typeof block.text === 'string' ? block.text : '')).join('\n')
}

function isBackground(args: unknown): boolean {
  return !!args && typeof args === 'object' && (args as Record<string, unknown>).run_in_background === true
}

export function presentBashCall(args: unknown): Presentation {
  const command = field(args, 'command') ?? '(no command)'
  if (isBackground(args)) return { kind: 'generic', title: `bash (background): ${command}`, body: field(args, 'description') }
  return { kind: 'terminal', title: command, description: field(args, 'description'), cwd: field(args, 'workdir') }
}

export function presentBashResult(args: unknown, result: ToolResult): Presentation {
  const call = presentBashCall(args)
  const output = resultText(result)
  if (call.kind === 'terminal') return { ...call, output }
  return { kind: 'generic', title: call.title, body: output }
}

export function presentTaskCall(tool: string) {
  return (args: unknown): Presentation => ({ kind: 'generic', title: `${tool} ${field(args, 'task_id') ?? '(no task id)'}` })
}

export function presentTaskResult(tool: string) {
  return (args: unknown, result: ToolResult): Presentation => ({
    kind: 'generic',
    title: `${tool} ${field(args, 'task_id') ?? '(no task id)'}`,
    body: resultText(result),
  })
}
