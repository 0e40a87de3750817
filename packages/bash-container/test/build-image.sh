#!/usr/bin/env bash
# Builds the offline test image for the container executor: the host's own Essential and required
# Debian packages and the installed dependencies of all of them, WITHOUT Perl and procps (the agent
# needs bash and a kernel only: the image proves it), copied file by file from this machine
# (`dpkg -L` → `tar --no-recursion` → `docker import`). No registry, no network.
#
# Usage: build-image.sh [image-name]   (default dsh-bash-test:bare; $DOCKER = the docker client)
# Skips the build when the image exists already, unless DSH_REBUILD_IMAGE=1.
set -euo pipefail
image=${1:-dsh-bash-test:bare}
docker=${DOCKER:-docker}

if [ "${DSH_REBUILD_IMAGE:-}" != 1 ] && "$docker" image inspect "$image" >/dev/null 2>&1; then
  echo "image $image exists"
  exit 0
fi
command -v dpkg-query >/dev/null || { echo "build-image.sh: needs a Debian host (dpkg-query)" >&2; exit 1; }

# The package closure: seeds are Essential/required packages; edges are Depends and Pre-Depends
# (for alternatives, the installed ones). Perl and procps are left out even where something
# depends on them (debconf, init-system-helpers): nothing the image runs needs them.
packages=$(dpkg-query -W -f='${binary:Package}\t${Package}\t${db:Status-Status}\t${Essential}\t${Priority}\t${Pre-Depends}, ${Depends}\n' | perl -e '
  my (%bin, %deps, @queue, %seen);
  while (<STDIN>) {
    chomp; my ($bp, $p, $st, $ess, $prio, $deps) = split /\t/;
    next unless $st eq "installed";
    next if $p =~ /^(perl|perl-base|perl-modules-[\d.]+|libperl[\d.]+|procps|libprocps\d*|libproc2-\d+)$/;
    $bin{$p} = $bp; $deps{$p} = $deps;
    push @queue, $p if $ess eq "yes" || $prio eq "required";
  }
  while (defined(my $p = shift @queue)) {
    next if $seen{$p}++ || !exists $bin{$p};
    for my $item (split /,/, $deps{$p}) {
      for my $alt (split /\|/, $item) {
        (my $d = $alt) =~ s/\(.*?\)|\[.*?\]|:\w+//g; $d =~ s/^\s+|\s+$//g;
        next if $d eq "";
        if (exists $bin{$d}) { push @queue, $d; last }
      }
    }
  }
  print "$bin{$_}\n" for grep { exists $bin{$_} } sort keys %seen;
')

list=$(mktemp)
skeleton=$(mktemp -d)
trap 'rm -f "$list" "$list.all"; rm -rf "$skeleton"' EXIT
# Every path the packages own, as its physical path (the usrmerge links /bin → usr/bin are followed
# in the directory part), only those that exist; then the links themselves.
# shellcheck disable=SC2086
dpkg -L $packages 2>/dev/null | perl -MCwd=realpath -ne '
  chomp; next if $_ eq "/." || $_ eq "/" || !m{^/};
  next unless -e $_ || -l $_;
  my ($dir, $base) = m{^(.*)/([^/]+)$} or next;
  my $real = realpath($dir eq "" ? "/" : $dir); next unless defined $real;
  my $p = ($real eq "/" ? "" : $real) . "/$base";
  print substr($p, 1), "\n" unless $seen{$p}++;
' >"$list.all"
for link in bin sbin lib lib64 lib32 libx32; do [ -L "/$link" ] && printf '%s\n' "$link" >>"$list.all"; done
for file in etc/passwd etc/group etc/shadow etc/nsswitch.conf; do [ -e "/$file" ] && printf '%s\n' "$file" >>"$list.all"; done
sort -u "$list.all" >"$list"; rm -f "$list.all"
# Directories no package owns but every container needs.
(cd "$skeleton" && mkdir -m 1777 tmp && mkdir -m 0700 root && mkdir workspace proc dev sys run)

echo "packing $(wc -l <"$list") paths of $(wc -w <<<"$packages") packages into $image"
grep -vxE "tmp|root|workspace|proc|dev|sys|run" "$list" >"$list.all"; mv "$list.all" "$list"
tar -cf - -C / --no-recursion -T "$list" -C "$skeleton" tmp root workspace proc dev sys run |
  "$docker" import -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' -c 'CMD ["/bin/bash"]' - "$image" >/dev/null
echo "built $image"
