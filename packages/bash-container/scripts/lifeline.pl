# The container's main process (PID 1; see LIFELINE_SCRIPT in src/scripts.ts): it lives while its stdin,
# attached by the server, stays open; SIGCHLD ignored makes the kernel reap orphans.
$SIG{CHLD} = "IGNORE"; 1 while sysread(STDIN, my $b, 65536);
