# A one-shot control helper: `<op> <pgid> <start> <marker> <arg>` with op `count`, `term` (arg:
# grace ms) or `wait`; `<start>` is the group leader's start time (the group claim in
# control-functions.sh). Naps are `read -t` on the channel's stdin: when the client ends the channel (or the
# connection dies), a `wait` stops at once instead of outliving its purpose.
op=$1 pg=$2 st=$3 mk=$4 arg=$5 pids="" xpids="" unsure="" eof=""
@CONTROL_FUNCTIONS@
# A report line before the answer (the answer is the last line).
note() { echo "$*"; }
nap() {
  local s; secs "$1"
  if [ -z "$eof" ]; then
    read -r -t "$s" -n 1 _; [ $? -gt 128 ] && return 0
    eof=1; return 1
  fi
  sleep "$s"
}
case $op in
  count) sscan; set -f; set -- $pids; set +f; echo "$#" ;;
  term) terminate; echo done ;;
  wait) wait_empty && echo empty ;;
  *) echo "unknown op $op" >&2; exit 2 ;;
esac
