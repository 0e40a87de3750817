/**
 * The naive MCP server of bench/peers.mjs: the SDK's stdio server with one tool that spawns
 * `bash --noprofile --norc -c <command>`, keeps every byte of stdout and stderr, and returns all of
 * it as one text block. No bounds, no spill file, no process tree handling: what a first draft does.
 */
import { spawn } from 'node:child_process'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'

const server = new Server({ name: 'naive', version: '0.0.0' }, { capabilities: { tools: {} } })
server.setRequestHandler(ListToolsRequestSchema, () => ({
  tools: [{ name: 'run', description: 'run a bash command', inputSchema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } }],
}))
server.setRequestHandler(
  CallToolRequestSchema,
  (request) =>
    new Promise((resolve) => {
      const child = spawn('bash', ['--noprofile', '--norc', '-c', String(request.params.arguments?.command ?? '')], { stdio: ['ignore', 'pipe', 'pipe'] })
      const out = []
      const err = []
      child.stdout.on('data', (chunk) => out.push(chunk))
      child.stderr.on('data', (chunk) => err.push(chunk))
      child.on('close', (code) => {
        const text = Buffer.concat(out).toString() + Buffer.concat(err).toString()
        resolve({ content: text === '' ? [] : [{ type: 'text', text }], isError: code !== 0 })
      })
    }),
)
process.stdin.on('end', () => process.exit(0))
await server.connect(new StdioServerTransport())
