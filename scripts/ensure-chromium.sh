#!/usr/bin/env bash
# Make sure a Chromium is available for the dashboard's browser tests.
# Installs Debian's chromium with apt-get when missing and running as root; otherwise explains.
# In CI (CI=true) a missing chromium is an error, never a silent skip.
set -euo pipefail

for candidate in chromium chromium-browser google-chrome /usr/bin/chromium; do
  if command -v "$candidate" >/dev/null 2>&1; then
    exit 0
  fi
done
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "chromium is missing: installing Debian's chromium with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium >/dev/null
  exit 0
fi
if [ "${CI:-}" = "true" ]; then
  echo "error: chromium is not installed and cannot be installed here (need root and apt-get)" >&2
  exit 1
fi
echo "notice: chromium is not installed and cannot be installed (need root and apt-get);"
echo "        the dashboard's browser tests are skipped."
