#!/usr/bin/env bash
# Builds the native launcher helper (native/launcher.c) for this machine's architecture into
# native/dsh-launcher-linux-<arch>: static, so that it runs on any Linux of that architecture (glibc
# or musl alike). The built file is committed and shipped in the package (no build at install).
set -euo pipefail
cd "$(dirname "$0")/.."
case "$(uname -m)" in x86_64) arch=x64 ;; aarch64) arch=arm64 ;; *) echo "unsupported architecture $(uname -m)" >&2; exit 1 ;; esac
${CC:-cc} -std=c11 -O2 -Wall -Wextra -Werror -static -s -o "native/dsh-launcher-linux-$arch" native/launcher.c
echo "native/dsh-launcher-linux-$arch"
