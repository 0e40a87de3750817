#!/usr/bin/env bash
# Builds the network bridge of proxy mode (native/netbridge.c) for this machine's architecture into
# native/dsh-netbridge-linux-<arch>: static, so that it runs in any sandbox of that architecture. The
# built file is committed and shipped in the package (no build at install).
set -euo pipefail
cd "$(dirname "$0")/.."
case "$(uname -m)" in x86_64) arch=x64 ;; aarch64) arch=arm64 ;; *) echo "unsupported architecture $(uname -m)" >&2; exit 1 ;; esac
# The source's hash is built in (a test checks that the shipped binary is the build of netbridge.c).
sha=$(sha256sum native/netbridge.c | cut -d' ' -f1)
out="native/dsh-netbridge-linux-$arch"
${CC:-cc} -std=c11 -O2 -Wall -Wextra -Werror -static -s -DSOURCE_SHA256="\"$sha\"" -o "$out.tmp" native/netbridge.c
mv -f "$out.tmp" "$out"
echo "$out"
