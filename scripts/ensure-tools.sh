#!/usr/bin/env bash
# Builds (once per machine) the Go-built binaries Hoist's tests, demo and benchmarks run:
# kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, and for the local control plane's
# real node the kubelet and kube-proxy, from k8s.io/kubernetes, etcd
# from go.etcd.io/etcd/server/v3, helm from helm.sh/helm/v3, kustomize from
# sigs.k8s.io/kustomize/kustomize/v5 and kwok (fake nodes, so workloads
# become ready without a container runtime) from sigs.k8s.io/kwok, cosign (tests sign images
# with it; the controller never runs it) from github.com/sigstore/cosign/v2, sops and age-keygen
# (tests encrypt fixtures with them; the controller decrypts in TypeScript) from
# github.com/getsops/sops/v3 and filippo.io/age, and flux-postbuild (Flux's post-build
# substitution, github.com/fluxcd/pkg/kustomize, behind scripts/flux-postbuild/main.go; tests
# compare with it), all at pinned versions. After editing scripts/flux-postbuild/main.go, delete
# the cached flux-postbuild binary: it is rebuilt only when missing.
# The cache lives outside the repo: ${HOIST_CACHE:-~/.cache/hoist}/bin/<tool>-<version>.
# Prints what it builds and how long it took; a warm run prints nothing and exits at once.
set -euo pipefail

# shellcheck source=tool-versions.env
. "$(dirname "$0")/tool-versions.env"

bash "$(dirname "$0")/ensure-packages.sh"
SCRIPTS=$(cd "$(dirname "$0")" && pwd)

CACHE=${HOIST_CACHE:-$HOME/.cache/hoist}
BIN=$CACHE/bin
mkdir -p "$BIN" "$CACHE/build"
export GOFLAGS=-buildvcs=false CGO_ENABLED=0

want=()
[ -x "$BIN/kube-apiserver-$K8S_VERSION" ] || want+=(kube-apiserver)
[ -x "$BIN/kube-controller-manager-$K8S_VERSION" ] || want+=(kube-controller-manager)
[ -x "$BIN/kube-scheduler-$K8S_VERSION" ] || want+=(kube-scheduler)
[ -x "$BIN/kubectl-$K8S_VERSION" ] || want+=(kubectl)
[ -x "$BIN/kubelet-$K8S_VERSION" ] || want+=(kubelet)
[ -x "$BIN/kube-proxy-$K8S_VERSION" ] || want+=(kube-proxy)
[ -x "$BIN/etcd-$ETCD_VERSION" ] || want+=(etcd)
[ -x "$BIN/helm-$HELM_VERSION" ] || want+=(helm)
[ -x "$BIN/kustomize-$KUSTOMIZE_VERSION" ] || want+=(kustomize)
[ -x "$BIN/kwok-$KWOK_VERSION" ] && [ -f "$BIN/kwok-stages-$KWOK_VERSION.yaml" ] || want+=(kwok)
[ -x "$BIN/cosign-$COSIGN_VERSION" ] || want+=(cosign)
[ -x "$BIN/sops-$SOPS_VERSION" ] || want+=(sops)
[ -x "$BIN/age-keygen-$AGE_VERSION" ] || want+=(age-keygen)
[ -x "$BIN/flux-postbuild-$FLUX_KUSTOMIZE_VERSION" ] || want+=(flux-postbuild)
only=${1:-}
if [ -n "$only" ]; then
  keep=(); for w in "${want[@]}"; do [[ " $only " == *" $w "* ]] && keep+=("$w"); done; want=("${keep[@]}")
fi
[ ${#want[@]} -eq 0 ] && exit 0

# One build at a time per cache: parallel test runs that find a tool missing wait for the build
# already under way instead of starting another (three concurrent Kubernetes builds on 2 cores
# never finish). The re-run under the lock builds only what is still missing then.
if [ -z "${HOIST_TOOLS_LOCKED:-}" ]; then
  if ! flock -n "$CACHE/.build.lock" true 2>/dev/null; then
    echo "hoist tools: another build is under way (lock $CACHE/.build.lock); waiting for it" >&2
  fi
  exec env HOIST_TOOLS_LOCKED=1 flock "$CACHE/.build.lock" bash "$0" "$@"
fi

command -v go >/dev/null || { echo "hoist: Go is needed to build ${want[*]} (apt-get install golang, or /usr/local/go)" >&2; exit 1; }
start=$SECONDS
say() { echo "hoist tools: $* ($((SECONDS - start))s elapsed, cache $BIN)" >&2; }
# One dot a minute so nobody wonders whether the build hangs.
( while sleep 60; do say "still building ${want[*]}"; done ) & ticker=$!
trap 'kill $ticker 2>/dev/null || true' EXIT

needs() { [[ " ${want[*]} " == *" $1 "* ]]; }

K8S_CMDS=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy)
k8s_wanted=""
for t in "${K8S_CMDS[@]}"; do needs "$t" && k8s_wanted="$k8s_wanted $t"; done
if [ -n "$k8s_wanted" ]; then
  # measured cold (2026-11-27, 2 cores shared with another Kubernetes build): see README "Quick start"
  say "building Kubernetes $K8S_VERSION (${k8s_wanted# }) from Go modules; first time takes ~10-20 min on 2 cores"
  dir=$CACHE/build/k8s-$K8S_VERSION
  mkdir -p "$dir"
  cd "$dir"
  if [ ! -f go.mod ]; then
    cat > go.mod <<MOD
module hoist.local/k8sbuild

go 1.24
MOD
    # k8s.io/kubernetes points its staging modules at ./staging; a consumer must point them at
    # the published v0.x.y versions instead.
    staging=v0.${K8S_VERSION#v1.}
    gomod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    grep -oE '^\s*k8s.io/[a-z0-9-]+ => ./staging/src/k8s.io/[a-z0-9-]+' "$gomod" | awk '{print $1}' | sort -u |
      while read -r m; do echo "replace $m => $m $staging" >> go.mod; done
    echo "require k8s.io/kubernetes $K8S_VERSION" >> go.mod
    go get "k8s.io/kubernetes@$K8S_VERSION" >/dev/null
  fi
  # every command the module builds, so go.sum covers all of them (a module made before the kubelet
  # and kube-proxy were added gets them here: tidy only adds their few extra dependencies)
  if ! grep -q 'cmd/kube-proxy"' tools.go 2>/dev/null; then
    { printf '//go:build tools\n\npackage tools\n\nimport (\n'
      for t in "${K8S_CMDS[@]}"; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$t"; done
      printf ')\n'; } > tools.go
    go mod tidy -e >/dev/null 2>&1 || true
  fi
  ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2) -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
  for t in $k8s_wanted; do
    t0=$SECONDS
    say "go build $t"
    go build -trimpath -ldflags "$ldflags" -o "$BIN/.$t-$K8S_VERSION.tmp" "k8s.io/kubernetes/cmd/$t"
    mv "$BIN/.$t-$K8S_VERSION.tmp" "$BIN/$t-$K8S_VERSION"
    say "built $t in $((SECONDS - t0))s"
  done
fi

if needs etcd; then
  say "building etcd $ETCD_VERSION from go.etcd.io/etcd/server/v3"
  dir=$CACHE/build/etcd-$ETCD_VERSION
  mkdir -p "$dir"; cd "$dir"
  if [ ! -f go.mod ]; then
    printf 'module hoist.local/etcdbuild\n\ngo 1.24\n' > go.mod
    cat > main.go <<'GO'
// etcd built from its server module: the same entry point as the etcd binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null
    go mod tidy >/dev/null
  fi
  go build -trimpath -ldflags "-s -w" -o "$BIN/.etcd-$ETCD_VERSION.tmp" .
  mv "$BIN/.etcd-$ETCD_VERSION.tmp" "$BIN/etcd-$ETCD_VERSION"
fi

# go_tool NAME VERSION MODULE PACKAGE GO LDFLAGS: builds PACKAGE of MODULE@VERSION into
# $BIN/NAME-VERSION, from a module of its own under $CACHE/build (GO: its go directive)
go_tool() {
  local name=$1 version=$2 module=$3 pkg=$4 gover=$5 ldflags=$6
  say "building $name $version from $module"
  local dir=$CACHE/build/$name-$version
  mkdir -p "$dir"; cd "$dir"
  if [ ! -f go.mod ]; then
    printf 'module hoist.local/%sbuild\n\ngo %s\n' "$name" "$gover" > go.mod
    printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$pkg" > tools.go
    go get "$module@$version" >/dev/null
    go mod tidy -e >/dev/null 2>&1 || true
  fi
  go build -trimpath -ldflags "-s -w $ldflags" -o "$BIN/.$name-$version.tmp" "$pkg"
  mv "$BIN/.$name-$version.tmp" "$BIN/$name-$version"
}

needs helm && go_tool helm "$HELM_VERSION" helm.sh/helm/v3 helm.sh/helm/v3/cmd/helm 1.24 "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
# the version kustomize reports (`kustomize version`) comes from its provenance package
needs kustomize && go_tool kustomize "$KUSTOMIZE_VERSION" sigs.k8s.io/kustomize/kustomize/v5 sigs.k8s.io/kustomize/kustomize/v5 1.26 "-X sigs.k8s.io/kustomize/api/provenance.version=$KUSTOMIZE_VERSION"
if needs kwok; then
  go_tool kwok "$KWOK_VERSION" sigs.k8s.io/kwok sigs.k8s.io/kwok/cmd/kwok 1.24 ""
  # kwok ships its stage definitions (how fake nodes and pods progress) in the module, not the binary
  stages=$(go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage
  for f in node/fast/node-initialize.yaml node/heartbeat/node-heartbeat.yaml pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    printf -- '---\n'; cat "$stages/$f"
  done > "$BIN/.kwok-stages.tmp"
  mv "$BIN/.kwok-stages.tmp" "$BIN/kwok-stages-$KWOK_VERSION.yaml"
fi
if needs cosign; then
  # measured cold: ~730 CPU-seconds of compiling (about 6-7 min on 2 idle cores) plus the module
  # download; 29 min on 2 cores shared with a Kubernetes build
  say "building cosign $COSIGN_VERSION from github.com/sigstore/cosign/v2; first time takes ~7-10 min on 2 cores"
  dir=$CACHE/build/cosign-$COSIGN_VERSION
  mkdir -p "$dir"; cd "$dir"
  GOBIN="$dir/bin" go install -trimpath -ldflags "-s -w" "github.com/sigstore/cosign/v2/cmd/cosign@$COSIGN_VERSION"
  mv "$dir/bin/cosign" "$BIN/cosign-$COSIGN_VERSION"
fi
needs sops && go_tool sops "$SOPS_VERSION" github.com/getsops/sops/v3 github.com/getsops/sops/v3/cmd/sops 1.25 ""
needs age-keygen && go_tool age-keygen "$AGE_VERSION" filippo.io/age filippo.io/age/cmd/age-keygen 1.24 ""
if needs flux-postbuild; then
  # Flux's post-build substitution (github.com/fluxcd/pkg/kustomize) behind a small main of this
  # repository (scripts/flux-postbuild/main.go); only the tests run it
  say "building flux-postbuild from github.com/fluxcd/pkg/kustomize $FLUX_KUSTOMIZE_VERSION"
  dir=$CACHE/build/flux-postbuild-$FLUX_KUSTOMIZE_VERSION
  mkdir -p "$dir"
  cp "$SCRIPTS/flux-postbuild/main.go" "$dir/main.go"
  cd "$dir"
  if [ ! -f go.mod ]; then
    printf 'module hoist.local/fluxpostbuild\n\ngo 1.26\n' > go.mod
    go get "github.com/fluxcd/pkg/kustomize@$FLUX_KUSTOMIZE_VERSION" >/dev/null
    go mod tidy >/dev/null
  fi
  go build -trimpath -ldflags "-s -w" -o "$BIN/.flux-postbuild-$FLUX_KUSTOMIZE_VERSION.tmp" .
  mv "$BIN/.flux-postbuild-$FLUX_KUSTOMIZE_VERSION.tmp" "$BIN/flux-postbuild-$FLUX_KUSTOMIZE_VERSION"
fi
say "done: ${want[*]}"
