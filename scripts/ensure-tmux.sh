#!/usr/bin/env bash
# Make sure tmux is available: the command line's interactive parts (top, call's
# questions) are tested on a tmux terminal (tests/support/terminal.py).
# Installs Debian's tmux with apt-get when missing and running as root; otherwise explains.
# In CI (CI=true) a missing tmux is an error, never a silent skip.
set -euo pipefail

if command -v tmux >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "tmux is missing: installing Debian's tmux with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends tmux >/dev/null
  exit 0
fi
if [ "${CI:-}" = "true" ] || [ "${ARGENTIC_TOOLS_REQUIRE_MOSQUITTO:-}" = "1" ]; then
  echo "error: tmux is not installed and cannot be installed here (need root and apt-get)" >&2
  exit 1
fi
echo "notice: tmux is not installed and cannot be installed (need root and apt-get);"
echo "        the command line's terminal tests are skipped."
