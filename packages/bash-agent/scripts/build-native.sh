#!/usr/bin/env bash
# Builds the far-side agent (native/*.c) into native/dsh-bash-agent-linux-<arch>: static, so that it
# runs in any container, pod or host of that architecture (glibc, musl, or no libc at all in the
# image). The built files are committed and shipped in the package (no build at install).
#
# Usage: build-native.sh [x64|arm64 …]   (default: this machine's architecture)
# x64 is built with ${CC:-cc} on x86-64; arm64 with ${CC_ARM64:-aarch64-linux-gnu-gcc} (Debian:
# gcc-aarch64-linux-gnu and libc6-dev-arm64-cross), or ${CC:-cc} on an arm64 machine.
set -euo pipefail
cd "$(dirname "$0")/.."
# The sources' hash is built in (a test checks that each shipped binary is the build of native/).
sha=$(cat $(LC_ALL=C ls native/*.c native/*.h) | sha256sum | cut -d' ' -f1)
here=$(uname -m)
archs=("$@")
if [ ${#archs[@]} -eq 0 ]; then
  case "$here" in x86_64) archs=(x64) ;; aarch64) archs=(arm64) ;; *) echo "unsupported architecture $here" >&2; exit 1 ;; esac
fi
for arch in "${archs[@]}"; do
  case "$arch" in
    x64) [ "$here" = x86_64 ] && cc=${CC:-cc} || cc=${CC_X64:-x86_64-linux-gnu-gcc} ;;
    arm64) [ "$here" = aarch64 ] && cc=${CC:-cc} || cc=${CC_ARM64:-aarch64-linux-gnu-gcc} ;;
    *) echo "unknown architecture $arch (x64 or arm64)" >&2; exit 1 ;;
  esac
  out="native/dsh-bash-agent-linux-$arch"
  # Built aside, then renamed over the old one: nothing ever reads half a binary.
  "$cc" -std=c11 -O2 -Wall -Wextra -Werror -static -s -DSOURCE_SHA256="\"$sha\"" -o "$out.tmp" native/*.c
  mv -f "$out.tmp" "$out"
  echo "$out"
done
