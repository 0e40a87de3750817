/**
 * The public surface of every package, pinned: the runtime names each entry of its package.json
 * `exports` gives (types are checked by tsc, not here). A name added to or dropped from an entry
 * fails this test until the table says so too: a public export is a decision, made here in the
 * review, never a side effect of `export *`. Runs on the built packages (dist/), which is what a
 * user imports; `npm test` builds first.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = resolve(import.meta.dirname, '..')

const PUBLIC: Record<string, string[]> = {
  '@deepseek-ai/dsh-agent': [
    'AGENT_ERROR', 'Agent', 'Agents', 'DEFAULT_BASE_URL', 'DEFAULT_MAX_STEPS',
    'DEFAULT_MODEL_TIMEOUT_MS', 'OpenAIChatAdapter', 'ScriptedAdapter', 'modelFailureFacts',
    'normalizeReply', 'openAIOptionsFromEnv', 'resultText',
  ],
  '@deepseek-ai/dsh-agent/errors': [
    'AGENT_ERROR', 'agentErrors', 'modelFailureFacts',
  ],
  '@deepseek-ai/dsh-bash': [
    'BASH_ERROR', 'BashExecutor', 'DEFAULT_SECRET_PATTERNS', 'FULL_OUTPUT_URI_PREFIX',
    'MAX_FULL_OUTPUT_READ', 'SANDBOX_MODES', 'SECRET_PATTERN_SYNTAX', 'TERMINAL_COLS', 'TERMINAL_ENV',
    'TERMINAL_ROWS', 'TERMINAL_TERM', 'codedError', 'formatSize', 'fullOutputUri', 'hasCode',
    'interactiveUnsupportedError', 'isDirectory', 'isSandboxMode', 'messageOf', 'modesUpTo',
    'noFullOutputError', 'notInteractiveError', 'parseFullOutputUri', 'parseSize', 'pluginTimer',
    'recordLogs', 'routeLogs', 'runEndStatus', 'secretRules', 'sleep', 'taskEndStatus',
    'taskFinishedError', 'unknownTaskError', 'widerModes',
  ],
  '@deepseek-ai/dsh-bash/conformance': [
    'LONG_TIMEOUT_MS', 'PROMPT_MS', 'TRAP_TIMEOUT_MS', 'WAIT', 'defineBashExecutorConformance', 'delay',
    'loadExecutorPlugin', 'numberedBytes', 'shellQuote', 'splitMarker', 'trackInstances', 'trackTimers',
    'uniqueMarker',
  ],
  '@deepseek-ai/dsh-bash/util': [
    'isDirectory', 'messageOf', 'pluginTimer', 'sleep',
  ],
  '@deepseek-ai/dsh-bash/secret-env': [
    'DEFAULT_SECRET_PATTERNS', 'SECRET_PATTERN_SYNTAX', 'secretRules',
  ],
  '@deepseek-ai/dsh-bash/sandbox-modes': [
    'SANDBOX_MODES', 'isSandboxMode', 'modesUpTo', 'widerModes',
  ],
  '@deepseek-ai/dsh-bash-agent': [
    'AGENT_ARCHES', 'AGENT_ERROR', 'AGENT_PROCESS_NAME', 'AGENT_PROTOCOL_VERSION', 'AgentSession',
    'CONTAINER_AGENT_DIR', 'EmptyWait', 'FrameReader', 'HELLO_START', 'INSTALL_SCRIPT', 'NEED_PREFIX',
    'POD_AGENT_DIR', 'POD_BOOT_SCRIPT', 'SSH_SERVE_SCRIPT', 'agentArchOf', 'agentBinary', 'agentErrors',
    'containerAgentArchive', 'containerAgentPath', 'describeNote', 'encodeFrame', 'findAgentBinary',
    'installArgs', 'launchThroughAgent', 'runInstall', 'sshServeArgs',
  ],
  '@deepseek-ai/dsh-bash-container': [
    'AGENT_IMAGE_REPOSITORY', 'AgentSessionExecutor', 'CONTAINER_ERROR', 'ContainerExecutor',
    'DEFAULT_ENGINE_URL', 'DEFAULT_MOUNT_PATH', 'EngineClient', 'EngineError', 'LABEL_AGENT',
    'LABEL_EXECUTOR', 'LABEL_SERVER', 'agentImage', 'containerConfigSchema', 'containerErrors',
    'engineTlsFromEnv', 'engineUrlFromEnv', 'isDeadServer', 'loadEngineTls', 'lostMessage',
    'parseContainerConfig', 'parseEngineUrl', 'serverIdentity', 'sweepDeadServers', 'workspaceArchive',
  ],
  '@deepseek-ai/dsh-bash-kit': [
    'BASH_ENV_NEXT_VARIABLE', 'CGROUP_VARIABLE', 'DEFAULT_SECRET_PATTERNS', 'DelegatingCommand',
    'MARKER_VARIABLE', 'NON_INTERACTIVE_ENV', 'OutputCollector', 'ProcessExecutor', 'TerminalView',
    'assertEnvName', 'buildEnvironment', 'closeInheritedFds', 'executorConfigSchema',
    'executorConfigShape', 'fillScript', 'limitsSchema', 'looksSecret', 'nonNegativeInt',
    'ownerSpillDirName', 'parseConfig', 'parseSttyModes', 'positiveInt', 'readScript', 'resolveRequest',
  ],
  '@deepseek-ai/dsh-bash-kubernetes': [
    'AGENT_VOLUME', 'ANNOTATION_SERVER', 'DEFAULT_POD_WORKDIR', 'KUBERNETES_ERROR',
    'KubernetesExecutor', 'LABEL_EXECUTOR', 'NETWORK_POLICY_NAME', 'PodSession', 'WORKSPACE_VOLUME',
    'buildPod', 'ensureDenyAllPolicy', 'kubernetesConfigSchema', 'kubernetesErrors',
    'parseKubernetesConfig', 'podCommand', 'readTemplate', 'sweepDeadPods',
  ],
  '@deepseek-ai/dsh-bash-local': [
    'LocalExecutor', 'MAX_ARGUMENT_BYTES', 'findExecutable', 'isLive', 'localConfigSchema',
    'ownV1Directory', 'parseLocalConfig', 'pidsWithCmdline', 'readStat', 'settledPidsWithCmdline',
  ],
  '@deepseek-ai/dsh-bash-policy': [
    'BashPolicy', 'MAX_NESTING', 'POLICY_DEFAULTS', 'POLICY_ERROR', 'PolicyError', 'compilePattern',
    'decide', 'definePolicy', 'extract', 'isPolicyError', 'loadParser', 'loadPolicyFile',
    'matchPattern', 'messages', 'parsePolicy', 'policySchema',
  ],
  '@deepseek-ai/dsh-bash-sandbox': [
    'BwrapSandbox', 'SANDBOX_MODES', 'SandboxExecutor', 'UNAVAILABLE_PREFIX', 'buildSeccompFilter',
    'bwrapArgs', 'checkRequestedMode', 'findGitMetadata', 'gitMounts', 'isSandboxMode',
    'parseSandboxConfig', 'sandboxConfigSchema', 'showsDeniedWrite', 'widerModes',
  ],
  '@deepseek-ai/dsh-bash-sandbox/rules': [
    'checkPattern', 'hostAddresses', 'matches', 'namedExactly', 'normalizeHost', 'protectedAddress',
    'refusal',
  ],
  '@deepseek-ai/dsh-bash-ssh': [
    'SSH_ERROR', 'SshExecutor', 'fingerprintOf', 'hostLabel', 'hostMatches', 'keyTypeOf', 'lostMessage',
    'parseSshConfig', 'parseSshTarget', 'sshConfigSchema', 'sshHostSchema',
  ],
  '@deepseek-ai/dsh-mcp': [
    'DEFAULT_IDLE_TIMEOUT_MS', 'DEFAULT_MAX_LINE_BYTES', 'DEFAULT_SECRET_INPUT', 'DEFAULT_SERVER_INFO',
    'MAX_MESSAGE_COMMAND', 'MCP_ERROR', 'MCP_PATH', 'McpHost', 'McpSession', 'PROTOCOL_VERSIONS',
    'ReplyDesk', 'SECRET_PAGE_WARNING', 'SERVER_CAPABILITIES', 'SESSION_CAPABILITY', 'StdioFront',
    'approvalMessage', 'approvalSchema', 'checkMessage', 'commandOfServer', 'decisionOf',
    'generateToken', 'initializeResult', 'isLoopback', 'mcpErrors', 'narrowingModes', 'openSecretPage',
    'secretElicitationMessage', 'serveHttp', 'serveStdio', 'waitingAnnouncement',
  ],
  '@deepseek-ai/dsh-mcp/host': [
    'McpHost', 'narrowingModes',
  ],
  '@deepseek-ai/dsh-mcp/stdio': [
    'DEFAULT_MAX_LINE_BYTES', 'serveStdio',
  ],
  '@deepseek-ai/dsh-mcp/http': [
    'DEFAULT_IDLE_TIMEOUT_MS', 'MCP_PATH', 'generateToken', 'isLoopback', 'serveHttp',
  ],
  '@deepseek-ai/dsh-mcp/front': [
    'DEFAULT_MAX_LINE_BYTES', 'DEFAULT_SERVER_INFO', 'PROTOCOL_VERSIONS', 'SERVER_CAPABILITIES',
    'StdioFront', 'initializeResult',
  ],
  '@deepseek-ai/dsh-mcp/otel': [
    'COMMAND_SPAN', 'createOtelTracing',
  ],
  '@deepseek-ai/dsh-mcp/reply': [
    'answerQuestion', 'httpDesk', 'listQuestions', 'localDesks', 'replyDirectory',
  ],
  '@deepseek-ai/dsh-mcp/reply-desk': [
    'REPLY_PATH', 'handleReplyRequest', 'refusePeer', 'replyRefusals', 'serveReplyDesk',
  ],
  '@deepseek-ai/dsh-mcp/tracing': [
    'OTLP_PROTOCOLS', 'otlpTracesRequested',
  ],
  '@deepseek-ai/dsh-tool-bash': [
    'ASK_USER_SENTENCE', 'BASH_ANNOTATIONS', 'BASH_DESCRIPTION', 'BASH_INPUT_DESCRIPTION',
    'BASH_KILL_DESCRIPTION', 'BASH_OUTPUT_DESCRIPTION', 'BASH_STATUSES', 'Carry',
    'DEFAULT_INPUT_WAIT_MS', 'DEFAULT_RANGE_BYTES', 'ESCAPE', 'GatheredRead', 'HIDDEN_REPLY',
    'MARKER_RESERVE', 'MAX_INPUT_BYTES', 'MAX_INPUT_WAIT_MS', 'MAX_WAIT_MS', 'MIN_HIDDEN_REPLY',
    'NOTICE_SOURCE', 'OWN_LINE_OPENINGS', 'QUIET_MS', 'ReplyMask', 'SANDBOX_ADDENDUM',
    'SECRET_INPUT_ERROR', 'STDERR_LABEL', 'TOOL_BASH_ERROR', 'TYPED_TEXT', 'ToolBash', 'UNTIL_LIMIT_MS',
    'UNTIL_LINE_CHARS', 'UNTIL_MAX_CHARS', 'UntilMatcher', 'alreadyFinishedText', 'appendMarkers',
    'askUserShape', 'bashDescription', 'bashOutputSchema', 'bashParameters', 'bashParametersFor',
    'bashPromptSection', 'checkBashArgs', 'checkBudget', 'checkInputArgs', 'checkInputChoice',
    'checkOutputArgs', 'checkTaskArgs', 'checkUntil', 'errorStructure', 'escapeOutput', 'fits',
    'foreignTaskMessage', 'inputParameters', 'killedText', 'laterNotices', 'limitMarkers', 'lineCount',
    'outputParameters', 'presentBashCall', 'presentBashResult', 'presentTaskCall', 'presentTaskResult',
    'rangeLimits', 'rangeRef', 'readRunStatus', 'readsAsOurs', 'renderNotice', 'renderRange',
    'renderRead', 'renderReadCut', 'renderRun', 'renderRunResult', 'renderStreams', 'runMarkers',
    'runStructure', 'sandboxMarkers', 'sandboxedBashParameters', 'secretInputErrors', 'sendUserReply',
    'spillThreshold', 'startedText', 'statusLine', 'tailWithin', 'taskParameters', 'taskStatus',
    'taskStructure', 'toolBashErrors', 'unescapeOutput', 'waitForOutput', 'waitingText', 'yieldMarker',
    'yieldSentence',
  ],
  '@deepseek-ai/dsh-tool-bash/prompt': [
    'BASH_DESCRIPTION', 'BASH_INPUT_DESCRIPTION', 'BASH_KILL_DESCRIPTION', 'BASH_OUTPUT_DESCRIPTION',
    'SANDBOX_ADDENDUM', 'bashDescription', 'bashPromptSection', 'yieldSentence',
  ],
  '@deepseek-ai/dsh-tool-bash/budget': [
    'MARKER_RESERVE', 'byteLength', 'checkBudget', 'fits', 'layoutWithinBudget', 'lineCount',
    'spillThreshold', 'tailWithin',
  ],
  '@deepseek-ai/dsh-tools': [
    'CALLER_ERROR', 'MAX_APPROVAL_TEXT', 'TOOL_ERROR', 'ToolRegistry', 'UNKNOWN_ERROR',
    'approvalReasons', 'approvalText', 'approvalTooLong', 'codeOf', 'codedError', 'errorResult',
    'formatIssues', 'hasCode', 'messageOf', 'serviceObject', 'snapshotArguments', 'textLength',
    'textResult', 'visibleText',
  ],
  '@deepseek-ai/dsh-tools/errors': [
    'CALLER_ERROR', 'TOOL_ERROR', 'codeOf', 'codedError', 'hasCode', 'toolErrors',
  ],
}

/** Every entry point the packages declare: `@scope/name` for `.`, `@scope/name/sub` for `./sub`. */
function declaredEntries(): string[] {
  const entries: string[] = []
  for (const dir of readdirSync(join(ROOT, 'packages')).sort()) {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'packages', dir, 'package.json'), 'utf8')) as { name: string; exports?: Record<string, unknown> }
    for (const sub of Object.keys(manifest.exports ?? {})) entries.push(sub === '.' ? manifest.name : `${manifest.name}${sub.slice(1)}`)
  }
  return entries
}

describe('public exports', () => {
  it('every entry point a package.json declares is pinned here, and nothing else is', () => {
    expect(declaredEntries().sort()).toEqual(Object.keys(PUBLIC).sort())
  })

  it.each(Object.entries(PUBLIC))('%s gives exactly its pinned names', async (entry, names) => {
    const module = (await import(entry)) as Record<string, unknown>
    expect(Object.keys(module).sort()).toEqual([...names].sort())
  })
})
