/** The floor: a minimal MCP server on the SDK over stdio, one tool (bench/startup.mjs). */
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'

const server = new Server({ name: 'minimal', version: '0.0.0' }, { capabilities: { tools: {} } })
server.setRequestHandler(ListToolsRequestSchema, () => ({
  tools: [{ name: 'echo', description: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }],
}))
server.setRequestHandler(CallToolRequestSchema, (request) => ({ content: [{ type: 'text', text: String(request.params.arguments?.text ?? '') }] }))
process.stdin.on('end', () => process.exit(0))
await server.connect(new StdioServerTransport())
