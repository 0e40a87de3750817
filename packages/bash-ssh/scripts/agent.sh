# The control agent: one per connection, started on the first control request, serving
# `<id> <op> <pgid> <start> <marker> <arg>` lines from stdin with `<id> <answer>` lines on stdout
# (`<start>`: the group leader's start time, see the group claim in control-functions.sh; `count`
# answers at once; `term` and `wait` run in the background and answer when done). Naps read a
# private FIFO with a timeout (no process per nap). Its first line is `@dsh-bash-ssh agent`
# (@HEADER_PREFIX@agent). When its stdin ends it exits; running waits notice and stop, running
# terminations go on to their end; a wait that did not notice (stuck) is ended by the agent.
agent=$$ nofifo="" pids="" xpids="" unsure="" waits=" " stalls=" " stall=""
{ f=$(mktemp -u "${TMPDIR:-/tmp}/dsh-bash-ssh-nap.XXXXXXXXXX") && mkfifo -m 600 "$f" && exec 9<>"$f" && rm -f -- "$f"; } 2>/dev/null || nofifo=1
@CONTROL_FUNCTIONS@
echo '@HEADER_PREFIX@agent'
# A report on request `$id` before its answer: `still …` (the client logs it) or `released …` (see `release`).
note() { echo "$id $*"; }
nap() {
  local s; secs "$1"
  if [ -z "$nofifo" ]; then read -r -t "$s" -u 9 _; else sleep "$s"; fi
  kill -0 "$agent" 2>/dev/null
}
while read -r id op pg st mk arg; do
  case $op in
    count) sscan; set -f; set -- $pids; set +f; echo "$id $#" ;;
    term) ( terminate; echo "$id done" ) & ;;
    wait)
      # Test hook (see wait_empty): with DSH_SSH_TEST_STALL_WAITS=once, only a command's first wait stalls.
      stall=""; if [ "${DSH_SSH_TEST_STALL_WAITS-}" = once ]; then case $stalls in *" $mk "*) ;; *) stall=1 stalls+="$mk ";; esac; fi
      ( wait_empty && echo "$id empty" ) & waits+="$! "
      # Only the waits still running are kept (`jobs -pr`: children not yet reaped).
      if [ ${#waits} -gt 4096 ]; then w=" "; for p in $(jobs -pr); do case $waits in *" $p "*) w+="$p ";; esac; done; waits=$w; fi ;;
    *) echo "$id error" ;;
  esac
done
# Stdin ended: the client is gone. A wait stops at its next nap; one that cannot (stuck) would stay
# forever, so the waits still running are ended here. `jobs -pr` lists only children this shell
# has not reaped: their pids cannot have been reused. Terminations are left to finish.
for p in $(jobs -pr); do case $waits in *" $p "*) kill "$p" 2>/dev/null;; esac; done
