# The control agent: one per connection, started on the first control request, serving
# `<id> <op> <pgid> <marker> <arg>` lines from stdin with `<id> <answer>` lines on stdout (`count`
# answers at once; `term` and `wait` run in the background and answer when done). Naps read a
# private FIFO with a timeout (no process per nap). Its first line is `@dsh-bash-ssh agent`
# (@HEADER_PREFIX@agent). When its stdin ends it exits; running waits notice and stop, running
# terminations go on to their end.
agent=$$ nofifo="" pids="" xpids="" unsure=""
{ f=$(mktemp -u "${TMPDIR:-/tmp}/dsh-bash-ssh-nap.XXXXXXXXXX") && mkfifo -m 600 "$f" && exec 9<>"$f" && rm -f -- "$f"; } 2>/dev/null || nofifo=1
@CONTROL_FUNCTIONS@
echo '@HEADER_PREFIX@agent'
nap() {
  local s; secs "$1"
  if [ -z "$nofifo" ]; then read -r -t "$s" -u 9 _; else sleep "$s"; fi
  kill -0 "$agent" 2>/dev/null
}
while read -r id op pg mk arg; do
  case $op in
    count) sscan; set -f; set -- $pids; set +f; echo "$id $#" ;;
    term) ( terminate; echo "$id done" ) & ;;
    wait) ( wait_empty && echo "$id empty" ) & ;;
    *) echo "$id error" ;;
  esac
done
