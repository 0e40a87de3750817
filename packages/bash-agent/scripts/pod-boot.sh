# PID 1 of a session pod until the agent is installed (see src/install.ts): run as `bash
# --noprofile --norc -c <this> boot <dir> <first s> <gone s> <agent name>`. It waits up to
# <first> seconds for an agent in <dir>/<uid>/ (the installation renames it there whole), then
# becomes it: `agent pod-init`, the pod's lifeline (native/lifeline.c).
trap 'exit 0' TERM
d=$1/$UID
for ((i = 0; i <= $2 * 10; i++)); do
  for f in "$d"/agent-*; do [ -x "$f" ] && exec "$f" pod-init "$2" "$3" "$4"; done
  sleep 0.1
done
echo "dsh-bash: no agent was installed within $2 s: the pod ends" >&2
