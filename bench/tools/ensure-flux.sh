#!/usr/bin/env bash
# Builds Flux's source-controller and kustomize-controller from their Go modules for
# bench/peers.ts only (never for npm test). Cached outside the repo like scripts/ensure-tools.sh.
# The controllers' go.mod replaces their api module with ./api, which the module zip leaves
# out (a nested module), so the api module of the same version is put back in place first.
# Versions: both are Flux v2.9 releases. source-controller is v1.9.0, not v1.9.6: v1.9.1..v1.9.6
# need github.com/fluxcd/pkg/artifact v0.18.1..v0.18.3, whose zips the Go module proxy reachable
# here refuses (403 "This module version is not available"); v1.9.0 builds unchanged from its
# own go.mod. Both versions are printed by bench/peers.ts into its results.
set -euo pipefail
SOURCE_CONTROLLER_VERSION="${SOURCE_CONTROLLER_VERSION:-v1.9.0}"
KUSTOMIZE_CONTROLLER_VERSION="${KUSTOMIZE_CONTROLLER_VERSION:-v1.9.6}"
CACHE="${HOIST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hoist}"
BIN="$CACHE/bench-bin"
mkdir -p "$BIN"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0

build() {
  local name=$1 version=$2
  local out="$BIN/$name-$version"
  if [ -x "$out" ]; then return; fi
  echo "ensure-flux: building $name $version (minutes, once)" >&2
  local src api work
  src=$(go mod download -json "github.com/fluxcd/$name@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  api=$(go mod download -json "github.com/fluxcd/$name/api@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  work=$(mktemp -d "$CACHE/.flux-build.XXXXXX")
  cp -r "$src/." "$work/"
  chmod -R u+w "$work"
  cp -r "$api/." "$work/api/"
  chmod -R u+w "$work/api"
  (cd "$work" && go build -trimpath -ldflags "-s -w" -o "$out.tmp" .)
  mv "$out.tmp" "$out"
  rm -rf "$work"
}

build source-controller "$SOURCE_CONTROLLER_VERSION"
build kustomize-controller "$KUSTOMIZE_CONTROLLER_VERSION"
echo "$BIN"
