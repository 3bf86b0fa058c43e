#!/usr/bin/env bash
# Make sure Debian's mosquitto binary is available for the test suite.
# Installs it with apt-get when missing and running as root; otherwise explains.
# In CI (CI=true) a missing mosquitto is an error, never a silent skip.
set -euo pipefail

if command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "mosquitto is missing: installing Debian's mosquitto with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq mosquitto >/dev/null
  # The package may start a system broker on 1883; the tests never use it.
  exit 0
fi
if [ "${CI:-}" = "true" ]; then
  echo "error: mosquitto is not installed and cannot be installed here (need root and apt-get)" >&2
  exit 1
fi
echo "notice: mosquitto is not installed and cannot be installed (need root and apt-get);"
echo "        the broker tests run on the embedded amqtt broker instead."
