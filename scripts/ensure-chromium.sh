#!/usr/bin/env bash
# Ensures a Chromium for the browser tests and benchmarks (Debian's chromium package): prints
# its path, installing the package when it is missing (apt-get, as root: CI and fresh machines).
# CHROMIUM_PATH names another browser binary instead.
set -euo pipefail
browser="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ ! -x "$browser" ]; then
  if [ -n "${CHROMIUM_PATH:-}" ]; then
    echo "CHROMIUM_PATH=$CHROMIUM_PATH is not an executable file." >&2
    exit 1
  fi
  echo "Chromium is missing: installing Debian's chromium package." >&2
  apt-get update >&2 && apt-get install -y chromium >&2
fi
echo "$browser"
