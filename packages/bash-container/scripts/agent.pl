# The in-container agent (see AGENT_SCRIPT in src/scripts.ts for its protocol): one per container,
# run as `perl -e <this file's text> <shell> <secret rules…: globs, !NAME kept>`; perl-base only.
# Whole-line comments are dropped when the text is read (readScript): they cost argv bytes.
use strict; use warnings; no warnings 'exec';
# Its command line becomes exactly this name (see AGENT_PROCESS_NAME): a pod's main process watches for it.
$0 = 'dsh-bash-agent';
use POSIX ();
use IO::Select;
use Fcntl qw(F_GETFL F_SETFL O_NONBLOCK O_WRONLY O_CREAT O_EXCL O_RDWR O_NOCTTY);
my ($shell, @secret) = @ARGV;
# The kit's secret rules (bash-kit env.ts): globs over the whole name, case-insensitive; `!NAME` keeps one.
my %keep_env = map { substr($_, 1) => 1 } grep { /^!/ } @secret;
my @secret_globs = map { my $r = join('.*', map { quotemeta } split(/\*/, $_, -1)); qr/^$r$/i } grep { $_ ne '' && !/^!/ } @secret;
$SIG{PIPE} = 'IGNORE';
$SIG{CHLD} = sub {};
binmode STDIN; binmode STDOUT;
my $sel = IO::Select->new();
my (%cmd, %fhcmd, %pid2id, @terms, @waits);
my $inbuf = '';
sub send_frame { my ($op, $id, $data) = @_; $data //= '';
  my $buf = "$op $id " . length($data) . "\n" . $data;
  while (length $buf) { my $n = syswrite(STDOUT, $buf); if (!defined $n) { next if $!{EINTR} || $!{EAGAIN}; exit 0 } substr($buf, 0, $n, '') } }
sub stat_of { my ($pid) = @_; open(my $f, '<', "/proc/$pid/stat") or return; my $l = <$f>; close $f; return unless defined $l;
  $l =~ s/^.*\) //s; return split / /, $l }
# A command's processes: its process group (number: the leader's pid) and every process carrying its
# marker. The group number is matched only while it is provably the command's ($c->{claim}): `led`
# while the leader is not reaped (alive or zombie, it holds the number); `orphaned` once reaped: each
# look must still see a member (a zombie too: it holds the number), and no process may have the
# leader's pid (the number is not handed out while the group lives, and only a process with that pid
# can make a new group of it: one there means the group ended between two looks); else `released`
# for good. A freed number taken by a stranger's new session is then never counted nor signalled.
sub scan { my ($c, $again) = @_; my (@pids, %st);
  opendir(my $d, '/proc') or return (); my @all = grep { /^\d+$/ } readdir $d; closedir $d;
  for my $p (@all) { next if $p == $$; my @st = stat_of($p) or next; $st{$p} = \@st }
  my $g = $c->{claim} ne 'released' ? $c->{pid} : 0;
  if ($g && $c->{claim} eq 'orphaned' && $st{$g}) { $c->{claim} = 'released'; $g = 0 }
  my $members = 0;
  for my $p (keys %st) { my $st = $st{$p};
    if ($g && $st->[2] == $g) { $members++; push @pids, $p unless $st->[0] eq 'Z' || $st->[0] eq 'X'; next }
    next if $st->[0] eq 'Z' || $st->[0] eq 'X';
    if (open(my $e, '<', "/proc/$p/environ")) { local $/; my $env = <$e>; close $e;
      push @pids, $p if defined $env && index("\0$env", "\0DSH_BASH_TASK=$c->{marker}\0") >= 0 } }
  if ($g && $c->{claim} eq 'orphaned' && !$members) {
    # One more look before the number goes for good: a member that forked and exited between the
    # listing and its stat left its child out of this one.
    return scan($c, 1) unless $again; $c->{claim} = 'released' }
  return @pids }
sub signal_all { my ($c, $sig) = @_; my @p = scan($c); return 0 unless @p;
  kill $sig, @p; kill 'CONT', @p if $sig eq 'TERM'; return 1 }
sub nonblock { my ($fh) = @_; my $fl = fcntl($fh, F_GETFL, 0); fcntl($fh, F_SETFL, $fl | O_NONBLOCK) }
# Linux's terminal ioctls (the generic numbers: x86, arm, riscv; not alpha/mips/powerpc/sparc).
# perl-base has no IO::Pty and no .ph headers, but ioctl itself is a core builtin.
use constant { TIOCGPTN => 0x80045430, TIOCSPTLCK => 0x40045431, TIOCSCTTY => 0x540E, TIOCSWINSZ => 0x5414 };
sub set_size { my ($fh, $cols, $rows) = @_; my $ws = pack('S4', $rows, $cols, 0, 0); ioctl($fh, TIOCSWINSZ, $ws) }
# posix_openpt + unlockpt + ptsname by hand; the slave is opened here (O_NOCTTY: the agent never
# takes a controlling terminal) so the master cannot read EIO before the child has it.
sub open_pty { my ($cols, $rows) = @_;
  sysopen(my $m, '/dev/ptmx', O_RDWR | O_NOCTTY) or return;
  my $unlock = pack('i', 0); ioctl($m, TIOCSPTLCK, $unlock) or return;
  my $n = pack('I', 0); ioctl($m, TIOCGPTN, $n) or return;
  set_size($m, $cols, $rows) or return;
  sysopen(my $s, '/dev/pts/' . unpack('I', $n), O_RDWR | O_NOCTTY) or return;
  return ($m, $s) }
# A terminal's echo and line-mode flags in stty's words (`-echo icanon`), read on the master: the
# terminal ioctls of a pty master act on its slave's settings. Empty when they cannot be read.
sub term_modes { my ($fh) = @_; my $t = POSIX::Termios->new; defined $t->getattr(fileno $fh) or return '';
  my $l = $t->getlflag; return (($l & POSIX::ECHO()) ? 'echo' : '-echo') . ' ' . (($l & POSIX::ICANON()) ? 'icanon' : '-icanon') }
sub start_cmd { my ($id, $payload) = @_;
  my @f = split /\0/, $payload, -1; my ($wd, $marker, $stdin, $n) = splice(@f, 0, 4);
  my @env = splice(@f, 0, $n); my $command = join("\0", @f);
  if (!-e $wd) { return send_frame('fail', $id, 'nowd') } if (!-d $wd) { return send_frame('fail', $id, 'notdir') }
  if (!chdir $wd) { return send_frame('fail', $id, 'noaccess') } chdir '/';
  my ($or, $ow, $er, $ew, $ir, $iw, $slave);
  if ($stdin =~ /^pty,(\d+),(\d+)$/) {
    # One terminal: the master is the command's output (read) and input (a dup, written), the
    # slave becomes its stdin/stdout/stderr and controlling terminal.
    ($or, $slave) = open_pty($1, $2) or return send_frame('fail', $id, "spawn:pty: $!");
    open($iw, '+<&', $or) or return send_frame('fail', $id, "spawn:pty: $!");
  } else {
    pipe($or, $ow) && pipe($er, $ew) or return send_frame('fail', $id, "spawn:pipe: $!");
    if ($stdin eq 'pipe') { pipe($ir, $iw) or return send_frame('fail', $id, "spawn:pipe: $!") }
  }
  my $pid = fork(); if (!defined $pid) { return send_frame('fail', $id, "spawn:fork: $!") }
  if ($pid == 0) {
    $SIG{PIPE} = 'DEFAULT'; $SIG{CHLD} = 'DEFAULT';
    POSIX::setsid();
    if ($slave) {
      # The new session's controlling terminal: ^C and ^Z become signals of its foreground group.
      ioctl($slave, TIOCSCTTY, 0) or do { print STDERR "dsh-bash-container: no controlling terminal: $!\n"; POSIX::_exit(126) };
      POSIX::dup2(fileno($slave), $_) for 0 .. 2;
    } else {
      if ($ir) { POSIX::dup2(fileno($ir), 0) } else { open(STDIN, '<', '/dev/null') }
      POSIX::dup2(fileno($ow), 1); POSIX::dup2(fileno($ew), 2);
    }
    chdir $wd or POSIX::_exit(125);
    for my $k (keys %ENV) { next if $keep_env{$k}; delete $ENV{$k} if grep { $k =~ $_ } @secret_globs }
    delete @ENV{qw(BASH_ENV ENV DSH_BASH_CGROUP DSH_BASH_ENV_NEXT)};
    for my $kv (@env) { my ($k, $v) = split /=/, $kv, 2; $ENV{$k} = $v }
    $ENV{DSH_BASH_TASK} = $marker;
    # Longer than the kernel allows for one argument (128 KiB): a private file the shell reads and deletes.
    if (length($command) > 100_000) {
      my $f = ($ENV{TMPDIR} // '/tmp') . "/dsh-bash-command.$$." . int(rand(1e9));
      my $fh;
      sysopen($fh, $f, O_WRONLY | O_CREAT | O_EXCL, 0600) && (print $fh $command) && close($fh)
        or do { print STDERR "dsh-bash-container: cannot store the command in $f: $!\n"; POSIX::_exit(126) };
      exec { $shell } $shell, '--noprofile', '--norc', '-c', 'eval "$(cat -- "$0" && rm -f -- "$0")"', $f;
    }
    exec { $shell } $shell, '--noprofile', '--norc', '-c', $command;
    print STDERR "dsh-bash-container: cannot run $shell: $!\n"; POSIX::_exit(127);
  }
  close $ow if $ow; close $ew if $ew; close $ir if $ir; close $slave if $slave;
  my $c = { id => $id, pid => $pid, claim => 'led', marker => $marker, out => $or, err => $er, in => $iw, inbuf => '', ineof => 0, pty => $slave ? 1 : 0 };
  $cmd{$id} = $c; $pid2id{$pid} = $id;
  nonblock($or); $sel->add($or); $fhcmd{fileno $or} = [$c, 'out'];
  if ($er) { nonblock($er); $sel->add($er); $fhcmd{fileno $er} = [$c, 'err'] }
  nonblock($iw) if $iw;
  # The leader's start time rides along: the second-channel kill (kill.pl) matches the group only while
  # the process with this pid is still this one.
  send_frame('ok', $id, "$pid " . ((stat_of($pid))[19] // 0)) }
sub close_stream { my ($c, $which) = @_; my $fh = $c->{$which} or return; $sel->remove($fh); delete $fhcmd{fileno $fh}; close $fh; $c->{$which} = undef }
sub flush_stdin { my ($c) = @_; my $fh = $c->{in} or return;
  while (length $c->{inbuf}) { my $n = syswrite($fh, $c->{inbuf}); if (!defined $n) { return if $!{EAGAIN}; $c->{inbuf} = ''; last } substr($c->{inbuf}, 0, $n, '') }
  if ($c->{ineof} && !length $c->{inbuf}) { close $fh; $c->{in} = undef } }
sub control { my ($op, $id, $payload) = @_; my $c = $cmd{$id};
  if ($op eq 'run') { return start_cmd($id, $payload) }
  if (!$c) { send_frame('count', $id, '0') if $op eq 'count'; send_frame('termed', $id) if $op eq 'term'; send_frame('empty', $id) if $op eq 'wait'; send_frame('modes', $id) if $op eq 'modes'; return }
  if ($op eq 'in') { $c->{inbuf} .= $payload; flush_stdin($c) }
  elsif ($op eq 'eof') { $c->{ineof} = 1 unless $c->{pty}; flush_stdin($c) }
  elsif ($op eq 'size') { my ($cols, $rows) = split / /, $payload; set_size($c->{in}, $cols, $rows) if $c->{pty} && $c->{in} }
  elsif ($op eq 'modes') { send_frame('modes', $id, $c->{pty} && $c->{in} ? term_modes($c->{in}) : '') }
  elsif ($op eq 'count') { my @p = grep { $c->{reaped} || $_ != $c->{pid} } scan($c); send_frame('count', $id, scalar @p) }
  elsif ($op eq 'term') { my $hit = signal_all($c, 'TERM');
    # A clean first scan still needs a second one before 'termed' (see timers).
    push @terms, { c => $c, kill_at => now() + $payload / 1000, next => now() + 0.01, step => 0.01, clean => $hit ? 0 : 1 } }
  elsif ($op eq 'wait') { push @waits, { c => $c, next => now(), step => 0.01 } }
  elsif ($op eq 'forget') { close_stream($c, 'out'); close_stream($c, 'err'); close $c->{in} if $c->{in}; $c->{in} = undef; $c->{forgotten} = 1;
    delete $cmd{$id} if $c->{reaped}; @waits = grep { $_->{c} != $c } @waits } }
# Monotonic enough and in perl-base (Time::HiRes is not): seconds since boot, 10 ms resolution.
sub now { open(my $u, '<', '/proc/uptime') or return time; my $l = <$u>; close $u; return (split / /, $l)[0] }
sub reap { while ((my $pid = waitpid(-1, POSIX::WNOHANG())) > 0) { my $st = $?; my $id = delete $pid2id{$pid}; next unless defined $id; my $c = $cmd{$id} or next;
    # Output already written by the main process goes first.
    drain($c); $c->{reaped} = 1; $c->{claim} = 'orphaned' if $c->{claim} eq 'led';
    # The leftover count rides along: the host asks for it right after every exit.
    my $left = scan($c);
    send_frame('exit', $id, (($st & 127) ? 's ' . ($st & 127) : 'c ' . ($st >> 8)) . " $left"); delete $cmd{$id} if $c->{forgotten} } }
sub read_stream { my ($c, $which) = @_; my $fh = $c->{$which} or return 0;
  my $n = sysread($fh, my $buf, 65536);
  # A terminal's master reads EIO once no process holds the slave any more: its end of output.
  if (!defined $n) { return 0 if $!{EAGAIN} || $!{EINTR}; $n = 0 }
  if ($n == 0) { close_stream($c, $which); send_frame($which eq 'out' ? 'eof1' : 'eof2', $c->{id}); return 0 }
  send_frame($which, $c->{id}, $buf); return 1 }
sub drain { my ($c) = @_; for my $w ('out', 'err') { for (1 .. 64) { last unless read_stream($c, $w) } } }
sub timers { my $t = now(); my $next;
  for my $x (@terms) { my $c = $x->{c};
    if ($t >= $x->{next}) {
      my $left = $t >= $x->{kill_at} ? signal_all($c, 'KILL') : scalar(scan($c));
      # Empty only after two clean scans 10 ms apart: a process inside execve reads an empty
      # environ (no marker) for a moment, so one clean scan can miss a double fork's last child.
      if (!$left) { if (++$x->{clean} >= 2) { send_frame('termed', $c->{id}); $x->{done} = 1; next } $x->{next} = $t + 0.01 }
      else { $x->{clean} = 0;
        $x->{step} *= 2 if $x->{step} < 0.1; $x->{next} = $t + ($t >= $x->{kill_at} ? 0.05 : $x->{step});
        $x->{next} = $x->{kill_at} if $t < $x->{kill_at} && $x->{next} > $x->{kill_at} } }
    $next = $x->{next} if !defined $next || $x->{next} < $next }
  @terms = grep { !$_->{done} } @terms;
  for my $x (@waits) { my $c = $x->{c};
    if ($t >= $x->{next}) {
      if (!scan($c)) { if (++$x->{clean} >= 2) { send_frame('empty', $c->{id}); $x->{done} = 1; next } $x->{next} = $t + 0.01 }
      else { $x->{clean} = 0; $x->{step} *= 2 if $x->{step} < 0.2; $x->{next} = $t + $x->{step} } }
    $next = $x->{next} if !defined $next || $x->{next} < $next }
  @waits = grep { !$_->{done} } @waits;
  return defined $next ? ($next - $t > 0 ? $next - $t : 0.005) : undef }
sub parse_input { while (1) { my $nl = index($inbuf, "\n"); return if $nl < 0;
    my ($op, $id, $len) = split / /, substr($inbuf, 0, $nl); return if length($inbuf) < $nl + 1 + $len;
    my $payload = substr($inbuf, $nl + 1, $len); substr($inbuf, 0, $nl + 1 + $len, '');
    control($op, $id, $payload) } }
nonblock(\*STDIN); $sel->add(\*STDIN);
send_frame('hello', 0);
while (1) {
  reap();
  my $timeout = timers();
  # A SIGCHLD that lands between reap() and select() would not interrupt it: poll while commands run.
  $timeout = 0.25 if %pid2id && (!defined $timeout || $timeout > 0.25);
  my @writers = grep { $_->{in} && length $_->{inbuf} } values %cmd;
  my $wsel = IO::Select->new(map { $_->{in} } @writers);
  my ($r, $w) = IO::Select->select($sel, @writers ? $wsel : undef, undef, $timeout);
  for my $fh (@{ $r // [] }) {
    if ($fh == \*STDIN || fileno($fh) == 0) { my $n = sysread(STDIN, my $buf, 65536);
      if (defined $n && $n == 0) { for my $c (values %cmd) { signal_all($c, 'KILL') } exit 0 }
      if (defined $n) { $inbuf .= $buf; parse_input() } next }
    my $h = $fhcmd{fileno $fh} or next; read_stream($h->[0], $h->[1]) }
  for my $c (@writers) { flush_stdin($c) if $c->{in} }
}
