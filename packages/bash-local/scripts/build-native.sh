#!/usr/bin/env bash
# Builds the native launcher helper (native/launcher.c) for this machine's architecture into
# native/dsh-launcher-linux-<arch>: static, so that it runs on any Linux of that architecture (glibc
# or musl alike). The built file is committed and shipped in the package (no build at install).
set -euo pipefail
cd "$(dirname "$0")/.."
case "$(uname -m)" in x86_64) arch=x64 ;; aarch64) arch=arm64 ;; *) echo "unsupported architecture $(uname -m)" >&2; exit 1 ;; esac
# The source's hash is built in (a test checks that the shipped binary is the build of launcher.c).
sha=$(sha256sum native/launcher.c | cut -d' ' -f1)
out="native/dsh-launcher-linux-$arch"
# Built aside, then renamed over the old one: a helper starting meanwhile runs the old or the new file, never half of one.
${CC:-cc} -std=c11 -O2 -Wall -Wextra -Werror -static -s -DSOURCE_SHA256="\"$sha\"" -o "$out.tmp" native/launcher.c
mv -f "$out.tmp" "$out"
echo "native/dsh-launcher-linux-$arch"
