/**
 * Variables that change what a command runs or loads, rather than what it works on. Setting one
 * (`LD_PRELOAD=x ls`, `export PATH=…`, `env GIT_PAGER=… git log`) turns an allowed command into
 * `ask`: the policy cannot see what the variable will make the command do.
 */
const EXACT = new Set([
  'PATH', 'ENV', 'BASH_ENV', 'PROMPT_COMMAND', 'PS0', 'PS1', 'PS2', 'PS4', 'SHELLOPTS', 'BASHOPTS', 'IFS',
  'GLOBIGNORE', 'CDPATH', 'HOME', 'XDG_CONFIG_HOME', 'XDG_DATA_HOME', 'ZDOTDIR', 'INPUTRC', 'EXECIGNORE',
  'PAGER', 'MANPAGER', 'MANOPT', 'EDITOR', 'VISUAL', 'BROWSER', 'LESSOPEN', 'LESSCLOSE', 'LESSKEY', 'LESS',
  'SYSTEMD_PAGER', 'SSH_ASKPASS', 'SUDO_ASKPASS', 'GCONV_PATH', 'HOSTALIASES', 'TAR_OPTIONS', 'SHELL',
  'PYTHONPATH', 'PYTHONSTARTUP', 'PYTHONHOME', 'PYTHONINSPECT', 'PYTHONUSERBASE', 'NODE_OPTIONS', 'NODE_PATH',
  'PERL5OPT', 'PERL5LIB', 'PERLLIB', 'PERL5DB', 'RUBYOPT', 'RUBYLIB', 'JAVA_TOOL_OPTIONS', '_JAVA_OPTIONS',
  'JDK_JAVA_OPTIONS', 'CLASSPATH', 'MAKEFLAGS', 'MAKEFILES', 'RIPGREP_CONFIG_PATH', 'FZF_DEFAULT_COMMAND',
  'LD_PRELOAD', 'LD_LIBRARY_PATH', 'LD_AUDIT',
  // What the program readers cannot see: less's key and environment files and tag program, more's
  // options, awk's include and extension paths, tar's default archive (host:file runs a remote shell).
  'LESSKEYIN', 'LESSKEY_CONTENT', 'LESSKEY_SYSTEM', 'LESSKEYIN_SYSTEM', 'LESSGLOBALTAGS', 'LESSEDIT', 'MORE', 'AWKPATH',
  'AWKLIBPATH', 'TAPE', 'RSH', 'MANROFFOPT', 'MANROFFSEQ', 'MANPL',
])

const PREFIXES = ['LD_', 'DYLD_', 'GIT_', 'BASH_FUNC_', 'NPM_CONFIG_', 'npm_config_', 'YARN_', 'PNPM_', 'CARGO_', 'RUSTC', 'PIP_']

export function isRiskyVariable(name: string): boolean {
  return EXACT.has(name) || PREFIXES.some((prefix) => name.startsWith(prefix))
}
