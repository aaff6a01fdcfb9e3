#!/usr/bin/env bash
# `npm run image`: builds the controller image with podman from the repository's Dockerfile.
#
# No base image is pulled (none can be, here or in an air-gapped CI): the build context is a root
# file system staged from what the repository already has — the Node 24 binary of the `node`
# devDependency, the helm and kustomize binaries scripts/ensure-tools.sh builds, git (git sources) and
# the OpenSSH client (ssh, ssh-keygen: git over ssh) with the shared libraries these link (ldd), the compiled controller and its production dependencies — and the
# Dockerfile copies it onto `scratch`. No shell, no package manager.
#
# Tags: <name>:<chart appVersion> (what charts/hoist deploys by default) and <name>:inputs-<hash>,
# the hash of every input. When an image with the current hash exists, nothing is rebuilt.
# Prints the image reference on stdout; progress, build time and size on stderr.
#   HOIST_IMAGE  repository (default localhost/hoist, the chart's `hoist` as podman names it)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
start=$SECONDS
say() { echo "hoist image: $*" >&2; }

. scripts/tool-versions.env
# shellcheck source=podman-env.sh
. scripts/podman-env.sh

name=${HOIST_IMAGE:-localhost/hoist}
version=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' charts/hoist/Chart.yaml)
[ -n "$version" ] || { say "charts/hoist/Chart.yaml has no appVersion"; exit 1; }
node_bin=$(readlink -f node_modules/node/bin/node)
[ -x "$node_bin" ] || { say "node_modules/node/bin/node missing: run npm ci first"; exit 1; }
helm_bin=${HOIST_CACHE:-$HOME/.cache/hoist}/bin/helm-$HELM_VERSION
[ -x "$helm_bin" ] || bash scripts/ensure-tools.sh helm
kustomize_bin=${HOIST_CACHE:-$HOME/.cache/hoist}/bin/kustomize-$KUSTOMIZE_VERSION
[ -x "$kustomize_bin" ] || bash scripts/ensure-tools.sh kustomize
git_bin=$(command -v git)
git_core=$("$git_bin" --exec-path)
ssh_bin=$(command -v ssh) || { say "ssh not found: install Debian's openssh-client"; exit 1; }
ssh_keygen_bin=$(command -v ssh-keygen)

# One build at a time per checkout: two callers (test files run in parallel) would stage into the
# same .tmp/image; the second waits and then finds the image built.
mkdir -p "$root/.tmp"
exec 9>"$root/.tmp/image.lock"
flock 9

# Everything the image is made of. A change to any of them gives a new hash, so a stale image is
# never reused; an unchanged tree reuses the image in about a second.
inputs_hash=$(
  {
    find api src -type f ! -name '*.test.ts' | LC_ALL=C sort | xargs sha256sum
    sha256sum Dockerfile scripts/image.sh package.json package-lock.json tsconfig.json charts/hoist/Chart.yaml
    "$node_bin" --version
    echo "helm $HELM_VERSION $(sha256sum < "$helm_bin")"
    echo "kustomize $KUSTOMIZE_VERSION $(sha256sum < "$kustomize_bin")"
    "$git_bin" --version
    sha256sum "$ssh_bin" "$ssh_keygen_bin"
  } | sha256sum | cut -c1-16
)
ref=$name:$version
hashed=$name:inputs-$inputs_hash
if podman image exists "$hashed"; then
  podman tag "$hashed" "$ref"
  say "$ref is up to date ($hashed, $(podman image inspect --format '{{.Size}}' "$hashed" | awk '{printf "%.1f MB", $1/1e6}'), $((SECONDS - start))s)"
  echo "$ref"
  exit 0
fi

ctx=$root/.tmp/image
rm -rf "$ctx"
mkdir -p "$ctx/rootfs/usr/local/bin" "$ctx/rootfs/usr/bin" "$ctx/rootfs/app" "$ctx/rootfs/etc/ssl/certs" "$ctx/cache" "$ctx/tmp"

say "staging node $("$node_bin" --version), helm $HELM_VERSION, kustomize $KUSTOMIZE_VERSION, $("$git_bin" --version)"
install -m 0755 "$node_bin" "$ctx/rootfs/usr/local/bin/node"
# the npm binary carries its symbol table (18 MB); the image does not need it
command -v strip >/dev/null && strip "$ctx/rootfs/usr/local/bin/node"
install -m 0755 "$helm_bin" "$ctx/rootfs/usr/local/bin/helm"
install -m 0755 "$kustomize_bin" "$ctx/rootfs/usr/local/bin/kustomize"
# git runs its helpers (remote-http for http/https, and itself for index-pack) from --exec-path
mkdir -p "$ctx/rootfs$git_core"
install -m 0755 "$git_bin" "$ctx/rootfs$git_core/git"
ln -s "$git_core/git" "$ctx/rootfs/usr/bin/git"
install -m 0755 "$git_core/git-remote-http" "$ctx/rootfs$git_core/git-remote-http"
for s in https ftp ftps; do ln -s git-remote-http "$ctx/rootfs$git_core/git-remote-$s"; done
# git over ssh: the OpenSSH client git runs (GIT_SSH) and ssh-keygen, which checks a key's passphrase
install -m 0755 "$ssh_bin" "$ctx/rootfs/usr/bin/ssh"
install -m 0755 "$ssh_keygen_bin" "$ctx/rootfs/usr/bin/ssh-keygen"
# libcurl's trust store for git over https (Node carries its own)
[ -f /etc/ssl/certs/ca-certificates.crt ] && cp /etc/ssl/certs/ca-certificates.crt "$ctx/rootfs/etc/ssl/certs/"
# the shared libraries of node, git, git-remote-http and ssh (helm and kustomize are static), with the loader
for lib in $(ldd "$node_bin" "$git_bin" "$git_core/git-remote-http" "$ssh_bin" "$ssh_keygen_bin" | awk '$3 ~ /^\// {print $3} $1 ~ /^\/.*ld-linux/ {print $1}' | sort -u); do
  real=$(readlink -f "$lib")
  mkdir -p "$ctx/rootfs$(dirname "$lib")"
  cp "$real" "$ctx/rootfs$lib"
done
printf 'root:x:0:0:root:/root:/sbin/nologin\nhoist:x:65532:65532:hoist:/tmp:/sbin/nologin\n' > "$ctx/rootfs/etc/passwd"
printf 'root:x:0:\nhoist:x:65532:\n' > "$ctx/rootfs/etc/group"

say "compiling the controller (api/, src/) and copying its production dependencies"
cat > "$ctx/tsconfig.json" <<JSON
{ "extends": "../../tsconfig.json", "include": ["../../api", "../../src"], "exclude": ["../../**/*.test.ts"],
  "compilerOptions": { "outDir": "rootfs/app/dist", "sourceMap": false, "noCheck": true } }
JSON
node_modules/.bin/tsc -p "$ctx/tsconfig.json"
# files read at run time beside the compiled modules
cp api/v1alpha2/*.yaml "$ctx/rootfs/app/dist/api/v1alpha2/"
mkdir -p "$ctx/rootfs/app/dist/scripts" && cp scripts/tool-versions.env "$ctx/rootfs/app/dist/scripts/"
cp package.json "$ctx/rootfs/app/"
# production dependencies as npm ci installed them (no second install, no network)
npm ls --omit=dev --all --parseable 2>/dev/null | tail -n +2 | sed "s|^$root/||" | while read -r dir; do
  mkdir -p "$ctx/rootfs/app/$(dirname "$dir")"
  cp -r "$dir" "$ctx/rootfs/app/$dir"
done
# type declarations and source maps are for editors, not for node (they are half of client-node)
find "$ctx/rootfs/app/node_modules" \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' \) -type f -delete
rm -rf "$ctx/rootfs/app/node_modules/@types"

say "podman build $ref"
podman build --quiet --tag "$hashed" --tag "$ref" --file Dockerfile "$ctx" >/dev/null
size=$(podman image inspect --format '{{.Size}}' "$ref" | awk '{printf "%.1f MB", $1/1e6}')
say "built $ref ($hashed): $size in $((SECONDS - start))s"
# older builds of this repository are only dead weight
podman images --format '{{.Repository}}:{{.Tag}}' "$name" | grep ":inputs-" | grep -v ":inputs-$inputs_hash$" | xargs -r podman rmi >/dev/null 2>&1 || true
echo "$ref"
