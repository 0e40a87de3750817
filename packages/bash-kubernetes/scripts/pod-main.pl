# PID 1 of a session pod's container and the pod's lifeline (see POD_MAIN_SCRIPT in src/pod.ts).
# Arguments: first (seconds to wait for the first agent), gone (seconds without an agent before it
# exits; 0: never), name (the agent's command line). perl-base only.
$SIG{CHLD} = "IGNORE"; $SIG{TERM} = sub { exit 0 };
my ($first, $gone, $name) = @ARGV; sleep 86400 while !$gone;
sub now { open(my $u, "<", "/proc/uptime") or return time; my $l = <$u>; close $u; return (split / /, $l)[0] }
sub lastpid { open(my $l, "<", "/proc/loadavg") or return 0; my $x = <$l>; close $l; return (split / /, $x)[4] }
my ($pid0, $seen, $last) = (lastpid(), 0, now());
while (1) { my ($agent, $other) = (0, 0);
  if (opendir(my $d, "/proc")) { for my $p (grep { /^\d+$/ } readdir $d) { next if $p == $$; $other = 1;
      open(my $f, "<", "/proc/$p/cmdline") or next; my $c = <$f>; close $f;
      if (defined $c && $c =~ /^\Q$name\E\0+$/) { $agent = 1; last } } closedir $d }
  if ($agent) { ($seen, $last) = (1, now()) } elsif ($other && !$seen) { $last = now() } elsif (!$seen && lastpid() ne $pid0) { $seen = 1 }
  if (!$agent && now() - $last >= ($seen ? $gone : $first)) { print STDERR "dsh-bash: no agent for $gone s: the pod ends\n"; exit 0 }
  select(undef, undef, undef, 0.2) }
