# The second-channel kill (see KILL_SCRIPT in src/scripts.ts): KILL to the command's process group and
# to every process whose environment holds DSH_BASH_TASK=<marker>, until none is left (at most ~5 s).
# Arguments: the marker, the command's pid (its group id; 0: unknown), the start time the agent read
# of it (its `ok` frame; 0: unknown). perl-base only.
# The group is matched only while the process with that pid has that start time: the leader itself,
# alive or a zombie the agent has not reaped, holds the number, so the group is the command's. Once
# the leader is gone this run cannot tell whether the group ended and a stranger's new session took
# the number since (the agent, which watched it, is the one not answering): only the marker is used
# from then on (it finds every descendant that kept its environment, in the group or not). The host's
# word that the leader exited would not do: a stuck agent may have reaped it without saying so.
use strict; use warnings;
my ($marker, $pgid, $start) = @ARGV; my $total = 0;
sub fields { my ($p) = @_; open(my $s, '<', "/proc/$p/stat") or return; my $st = <$s>; close $s; return unless defined $st;
  return split / /, substr($st, rindex($st, ')') + 2) }
sub scan { my @pids;
  $pgid = 0 if $pgid && (!$start || ((fields($pgid))[19] // -1) != $start);
  opendir(my $d, '/proc') or return (); my @all = grep { /^\d+$/ } readdir $d; closedir $d;
  for my $p (@all) { next if $p == $$;
    my @f = fields($p) or next; next if $f[0] eq 'Z' || $f[0] eq 'X';
    if ($pgid && $f[2] == $pgid) { push @pids, $p; next }
    if (open(my $e, '<', "/proc/$p/environ")) { local $/; my $env = <$e>; close $e;
      push @pids, $p if defined $env && index("\0$env", "\0DSH_BASH_TASK=$marker\0") >= 0 } }
  return @pids }
for (1 .. 250) { my @p = scan(); last unless @p; $total += kill 'KILL', @p; select(undef, undef, undef, 0.02) }
print "$total\n";
