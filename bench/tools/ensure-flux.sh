#!/usr/bin/env bash
# Builds Flux's source-controller and kustomize-controller from their Go modules for
# bench/peers.ts only (never for npm test). Cached outside the repo like scripts/ensure-tools.sh.
# The controllers' go.mod replaces their api module with ./api, which the module zip leaves
# out (a nested module), so the api module of the same version is put back in place first.
set -euo pipefail
FLUX_VERSION="${FLUX_VERSION:-v1.9.6}" # source-controller and kustomize-controller, Flux v2.9
CACHE="${HOIST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hoist}"
BIN="$CACHE/bench-bin"
mkdir -p "$BIN"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0

for name in source-controller kustomize-controller; do
  out="$BIN/$name-$FLUX_VERSION"
  if [ -x "$out" ]; then continue; fi
  echo "ensure-flux: building $name $FLUX_VERSION (minutes, once)" >&2
  src=$(go mod download -json "github.com/fluxcd/$name@$FLUX_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  api=$(go mod download -json "github.com/fluxcd/$name/api@$FLUX_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  work=$(mktemp -d "$CACHE/.flux-build.XXXXXX")
  cp -r "$src/." "$work/"
  chmod -R u+w "$work"
  cp -r "$api/." "$work/api/"
  chmod -R u+w "$work/api"
  (cd "$work" && go build -trimpath -ldflags "-s -w" -o "$out.tmp" .)
  mv "$out.tmp" "$out"
  rm -rf "$work"
done
echo "$BIN"
