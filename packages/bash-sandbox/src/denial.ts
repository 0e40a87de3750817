/**
 * Recognizes, in a failed command's stderr, a write the sandbox refused.
 *
 * The sandbox makes paths read-only with read-only mounts, so a refused write fails with EROFS:
 * "Read-only file system" (coreutils, bash, git, Python `[Errno 30]`, Node `EROFS: read-only file
 * system`, Rust `os error 30`). "Permission denied" (EACCES) is also counted when the same line shows
 * a write (`touch: cannot touch …`, `cannot create …`, `mkdir: …`, `EACCES: permission denied, mkdir`).
 * A bare `bash: line 1: /x: Permission denied` is not counted: it may be a read or a script without
 * the execute bit, and the sandbox never refuses those (its refusals are EROFS).
 */

const READ_ONLY_FS = /read-only file system|\bEROFS\b|\[Errno 30\]|os error 30/i

const PERMISSION_DENIED = /permission denied|\bEACCES\b|\[Errno 13\]|os error 13/i

/** Words that show the failed operation was a write. */
const WRITE_CUES = new RegExp(
  [
    // coreutils, git and most tools: "touch: cannot touch 'x'", "cannot create directory", "could not lock config file"
    String.raw`\b(?:cannot|can't|could not|couldn't|unable to|failed to)\s+(?:create|touch|write|make|remove|unlink|rename|move|copy|lock|link|symlink|truncate|overwrite|save|append|delete|mkdir|rmdir|open\b.*\bfor writing)`,
    // tools that only write: "mkdir: …", "tee: …"
    String.raw`^\s*(?:touch|mkdir|rmdir|rm|ln|tee|truncate|mktemp):`,
    // Node.js: "EACCES: permission denied, mkdir '/x'" (an "open" is ambiguous, so only the calls that write)
    String.raw`permission denied,\s*(?:mkdir|rmdir|unlink|rename|copyfile|symlink|link|utime|mkdtemp)\b`,
  ].join('|'),
  'i',
)

/** True when `stderr` shows a write refused by read-only mounts or permissions. */
export function showsDeniedWrite(stderr: string): boolean {
  if (!stderr) return false
  for (const line of stderr.split('\n')) {
    if (READ_ONLY_FS.test(line)) return true
    if (PERMISSION_DENIED.test(line) && WRITE_CUES.test(line)) return true
  }
  return false
}
