# Shell functions shared by the control helpers (control.sh, agent.sh). A command's processes are
# found by its process group ($pg, the pid the wrapper reported; 0 for none) and by its marker ($mk)
# in /proc/<pid>/environ, so descendants that left the group (setsid, nohup, double fork) are found
# too. Zombies, kernel threads and exiting processes never count. `nap <ms>` and `note <text>` (a report line
# before the answer) are defined by each script.
#
# The group claim: $pg is matched and signalled only while its number is provably the command's.
# $st is the start time of the group's leader (field 22 of /proc/$pg/stat, clock ticks since boot,
# reported by the wrapper with the pid): pid and start time name one process for good. A number is
# not reused while any process still has it as its pid or pgid, and a group with that number can
# only be made again by a process whose pid is that number. So a scan (a snapshot of /proc: its
# `for` list is fixed when it starts) keeps the claim while
#   - the leader is there (pid $pg with start time $st, a zombie too): the group is ours (led), or
#   - the leader is gone and the scan still sees a member (pgid $pg, zombies and exiting ones too):
#     the number never came free since the previous scan, which saw a member too (orphaned);
# and releases it for good (`release`: $pg becomes 0 for the rest of the request, and a line
# `released reused|empty` goes before the answer) when pid $pg is another process (the group ended,
# its number went to a stranger) or when no member is seen (the group ended; a stranger may make a
# new one with that number at any time). The server stops sending the pgid (sends 0) once it read a
# `released` line: the state lives there because each request is its own process (the agent runs
# `term` and `wait` in subshells; control.sh is one-shot), and the server is the one place every
# later request of the command passes through. The one gap left: between two scans (≤ ~0.3 s in a
# wait; between the leader's exit and the first request, the channel's latency) the group empties, a
# whole pid wrap gives its number to a stranger that makes its own group, forks, and its leader
# exits; the next scan then takes the stranger's group for ours. bash-local's GroupClaim has it too.
#
# The same rigour as the local marker tracker (bash-local scan.ts and exact-kill.ts, issue 19): a
# process inside execve reads an empty environment for a moment, so an empty environment with
# empty arguments is `unsure` and the settled scan (`sscan`) looks again; the tree is empty only
# after two consecutive settled scans found nothing (`empty`); the kill freezes the tree (SIGSTOP
# to a fixpoint where a scan finds nothing new) before SIGKILL, then confirms. Environments are
# read with `mapfile -d ''` (bash >= 4.4): one read per process, no process started per scan.
# @MARKER_VARIABLE@ is the kit's marker variable. Comment lines are not sent to the remote side.
# Sets `pids` (all live processes of the command), `xpids` (those outside its process group)
# and `unsure` (processes caught inside execve: their environment cannot be read yet).
scan() {
  pids="" xpids="" unsure=""; local f p l s x vars member=""
  for f in /proc/[0-9]*/stat; do
    { read -r l <"$f"; } 2>/dev/null || continue
    p=${f#/proc/}; p=${p%/stat}
    l=${l##*) }; set -f; set -- $l; set +f
    if [ "$pg" -gt 0 ]; then
      # Field 22 (start time) is $20 here: the cut at the last `) ` leaves field 3 in $1.
      if [ "$p" = "$pg" ] && [ "${20}" != "$st" ]; then release reused; scan; return; fi
      # A member holds the number even as a zombie or while it exits: it counts for the claim.
      [ "$3" = "$pg" ] && member=1
    fi
    case $1 in Z|X) continue;; esac
    # PF_KTHREAD | PF_EXITING: a kernel thread, or a process that can only die now.
    (( $7 & 0x200004 )) && continue
    if [ "$pg" -gt 0 ] && [ "$3" = "$pg" ]; then pids+=" $p"; continue; fi
    [ -n "$mk" ] && [ "$p" != "$$" ] && [ "$p" != "$BASHPID" ] || continue
    { mapfile -d "" -t vars <"/proc/$p/environ"; } 2>/dev/null || continue
    if [ ${#vars[@]} -eq 0 ]; then
      # Empty: a cleared environment, or a read that fell into an execve. Arguments are set in the
      # same step as the environment: with arguments the exec is over and a new read is what it runs with.
      x=""; { IFS= read -r -d "" x <"/proc/$p/cmdline"; } 2>/dev/null
      if [ $? -ne 0 ] && [ -z "$x" ]; then unsure+=" $p"; continue; fi
      { mapfile -d "" -t vars <"/proc/$p/environ"; } 2>/dev/null || continue
    fi
    s=$'\001'; IFS=$'\001'; s+="${vars[*]}"$'\001'; IFS=$' \t\n'
    case $s in *$'\001'"@MARKER_VARIABLE@=$mk"$'\001'*) pids+=" $p" xpids+=" $p";; esac
  done
  [ "$pg" -gt 0 ] && [ -z "$member" ] && release empty
  return 0
}
# The group is not (or no longer provably) the command's: never matched or signalled again in this
# request, and the server is told (it sends 0 from now on). `$1`: `reused` or `empty` (see above).
release() { pg=0; note "released $1"; }
# A scan with no process left unsure (for at most about a second).
sscan() {
  local i
  for ((i = 0; i < 50; i++)); do scan; [ -z "$unsure" ] && return 0; nap 1; done
}
# True when two consecutive settled scans find nothing.
empty() { sscan; [ -z "$pids" ] || return 1; sscan; [ -z "$pids" ]; }
# The group as a whole (atomic for its members), only while the last scan kept the claim (pg > 0) and
# saw a live member.
grp() { [ "$pg" -gt 0 ] && [ "$pids" != "$xpids" ] && kill -"$1" -- -"$pg" 2>/dev/null; }
# One signal per process: the group, then the escapees.
sig() {
  scan; [ -n "$pids" ] || return 1
  grp "$1"
  [ -n "$xpids" ] && kill -"$1" $xpids 2>/dev/null
  [ "$1" = TERM ] && kill -CONT $pids 2>/dev/null
  return 0
}
# SIGSTOP to a fixpoint (a stopped process cannot fork; a fork under way restarts or its child
# is visible to the next scan), SIGKILL everything frozen, then confirm with two empty scans.
# The SIGKILL goes to what the fixpoint's last scan found (every frozen process still alive is
# found: stopped, it can neither exec nor leave), never to the list of pids frozen since the
# start: a pid frozen in an early round whose process had already died (between its scan and the
# SIGSTOP) may belong to a stranger by now (pids wrap within seconds on a busy host), such as
# another request's scan loop of this very agent, which would then never answer. A frozen pid the
# last scan does not find is dead or such a stranger, maybe stopped by us: it gets a SIGCONT, which
# also cancels a SIGSTOP still pending (a state read could not tell: the stop takes effect later).
freeze_kill() {
  local frozen=" " fresh p i n=0
  for ((i = 0; i < 200; i++)); do
    sscan; fresh=""
    for p in $pids; do case $frozen in *" $p "*) ;; *) fresh+=" $p";; esac; done
    [ -z "$fresh" ] && break
    grp STOP; kill -STOP $fresh 2>/dev/null; frozen+="${fresh# } "
  done
  grp KILL; [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
  for p in $frozen; do case " $pids " in *" $p "*) ;; *) kill -CONT "$p" 2>/dev/null;; esac; done
  for ((i = 0; i < 250 && n < 2; i++)); do
    sscan
    if [ -z "$pids" ]; then n=$((n + 1)); continue; fi
    n=0; grp KILL; kill -KILL $pids 2>/dev/null; nap 20
  done
}
secs() { printf -v s "%d.%03d" $(($1 / 1000)) $(($1 % 1000)); }
# TERM to everything, the freezing KILL after `$arg` ms to whatever is left.
terminate() {
  local waited=0 step=10
  sig TERM || { empty && return 0; }
  while [ "$waited" -lt "$arg" ]; do
    [ $((arg - waited)) -lt $step ] && step=$((arg - waited))
    nap $step; waited=$((waited + step))
    empty && return 0
    [ $step -lt 100 ] && step=$((step * 2))
  done
  freeze_kill
}
# What the last settled scan still sees, in `desc`: `<pid>:<why>:<state>:<name>` per process, why
# being `group` (in the process group), `marker` (outside it, carrying the marker) or `exec` (its
# environment could not be read: inside an execve for a whole settled scan). At most 50 entries,
# then `+<n>` for the rest, names cut at 15 characters: the line stays under PIPE_BUF (4096 bytes), so
# the one write(2) of its echo cannot interleave with another request's answer on the agent's stdout.
seen() {
  local p l n st why k=0; desc=""
  for p in $pids $unsure; do
    if ((++k > 50)); then set -f; set -- $pids $unsure; set +f; desc+=" +$(($# - 50))"; break; fi
    l=""; { read -r l <"/proc/$p/stat"; } 2>/dev/null
    n=${l#*(}; n=${n%)*}; n=${n:0:15}; st=${l##*) }; st=${st%% *}
    why=group
    case " $xpids " in *" $p "*) why=marker;; esac
    case " $unsure " in *" $p "*) why=exec;; esac
    desc+=" $p:$why:${st:-gone}:${n//[^A-Za-z0-9._-]/?}"
  done
  desc=${desc# }
}
# Until no process is left; stops early (status 1) when nap says the requester is gone. With `$arg`
# > 0 (ms), after that long, then twice as long more, and so on, `note` reports what the scans still see
# (`still <desc>`): a wait that does not end explains itself. Time is the shell's SECONDS (whole
# seconds of the wall clock), not a sum of naps: under load a scan can take longer than its nap.
wait_empty() {
  local step=10 every=$(((arg + 999) / 1000)) due
  due=$((SECONDS + every))
  # Test hook: with DSH_SSH_TEST_STALL_WAITS in the remote environment (test/ssh.test.ts sets it
  # through sshd's SetEnv) a wait stalls before its first scan, as one whose nap never returned or
  # that was stopped: every wait, or with `once` a command's first wait in the agent (`stall`).
  case ${DSH_SSH_TEST_STALL_WAITS-} in
    "") ;;
    once) [ -z "${stall-}" ] || read -r -u 9 _ ;;
    *) read -r -u 9 _ 2>/dev/null || read -r _ ;;
  esac
  until empty; do
    if [ "$arg" -gt 0 ] && [ "$SECONDS" -ge "$due" ]; then seen; note "still $desc"; every=$((every * 2)); due=$((SECONDS + every)); fi
    nap $step || return 1
    # An `if`, not `&&`: an until loop's status is its body's last command's, and a false test
    # there made the wait end without its answer once the step had reached 200 ms.
    if [ $step -lt 200 ]; then step=$((step * 2)); fi
  done
}
