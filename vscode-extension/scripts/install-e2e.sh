#!/usr/bin/env bash
# Installs what the VS Code extension's build and tests need on a fresh Debian machine:
# Debian's chromium (the browser playwright-core drives), libkrb5-dev (code-server's kerberos
# module builds against it) and ripgrep; the extension's npm packages; and code-server (a real
# VS Code in the browser) from the npm registry into a cache folder.
#
# code-server 4.100.3 is the newest release that runs on Node 20. Its @vscode/ripgrep postinstall
# downloads a ripgrep build from GitHub, which these machines cannot reach; it first looks in
# its download cache, so Debian's rg is packed there under the asset name it expects.
#
# Usage: vscode-extension/scripts/install-e2e.sh      (as root, or with sudo available for apt)
# Environment: ELELEM_VSCODE_CACHE (default ~/.cache/elelem-vscode-e2e) holds code-server.
# Running it again skips whatever is already installed.
set -euo pipefail

EXTENSION_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE_DIR="${ELELEM_VSCODE_CACHE:-$HOME/.cache/elelem-vscode-e2e}"
CODE_SERVER_VERSION=4.100.3
# What code-server 4.100.3's lib/vscode/npm-shrinkwrap.json pins, and the asset that version fetches.
RIPGREP_PACKAGE_VERSION=1.15.11
RIPGREP_ASSET=ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz

log() { printf '[install-e2e] %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

install_debian_packages() {
  local missing=() package
  for package in chromium libkrb5-dev ripgrep; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' \
      || missing+=("$package")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    log "Debian packages present"
    return
  fi
  log "apt-get install ${missing[*]}"
  as_root apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive \
    apt-get -o DPkg::Lock::Timeout=600 install -y -q "${missing[@]}"
}

seed_ripgrep_download_cache() {
  local tmp cache
  tmp="$(node -p 'require("os").tmpdir()')"
  cache="$tmp/vscode-ripgrep-cache-$RIPGREP_PACKAGE_VERSION"
  mkdir -p "$cache"
  # The archive holds `rg` at its root, as the GitHub release asset does.
  tar -czf "$cache/$RIPGREP_ASSET" -C "$(dirname "$(command -v rg)")" rg
  log "seeded $cache/$RIPGREP_ASSET with $(rg --version | head -1)"
}

install_code_server() {
  local prefix="$CACHE_DIR/code-server-$CODE_SERVER_VERSION"
  local package="$prefix/node_modules/code-server"
  if [ -x "$package/lib/vscode/node_modules/@vscode/ripgrep/bin/rg" ] \
    && [ -f "$package/out/node/entry.js" ]; then
    log "code-server $CODE_SERVER_VERSION present in $prefix"
    return
  fi
  seed_ripgrep_download_cache
  mkdir -p "$prefix"
  log "npm install code-server@$CODE_SERVER_VERSION into $prefix (builds native modules; minutes)"
  (
    cd "$prefix"
    # allowScripts: npm 11 asks for install-script approval; code-server's postinstall is the install.
    [ -f package.json ] \
      || echo '{"name": "elelem-code-server", "private": true, "allowScripts": {"code-server": true}}' > package.json
    npm_config_unsafe_perm=true npm_config_yes=true npm_config_nodedir=/usr \
      npm install --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION"
  )
  test -x "$package/lib/vscode/node_modules/@vscode/ripgrep/bin/rg"
}

install_extension_packages() {
  log "npm ci in $EXTENSION_DIR"
  (cd "$EXTENSION_DIR" && npm ci --no-audit --no-fund --loglevel=error)
}

start=$(date +%s)
install_debian_packages
install_extension_packages
install_code_server
log "done in $(( $(date +%s) - start )) s; code-server: $CACHE_DIR/code-server-$CODE_SERVER_VERSION/node_modules/.bin/code-server"
