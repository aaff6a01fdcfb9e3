#!/usr/bin/env bash
# Builds the images the local cluster's real node runs (nothing can be pulled): one static Go
# binary per program in test/images/ (pause: the pod sandbox; web, webhook, job: test
# workloads), each copied onto `scratch` by `podman build`, saved together with `podman save`
# into one archive that src/devcluster imports into containerd (`ctr images import`).
#
# Cached by content: the tag is a hash of test/images/ and the Go version, and the archive lives
# at ${HOIST_CACHE:-~/.cache/hoist}/node-images/<hash>.tar; a warm run only hashes and exits.
# Prints, on stdout, the archive's path and then one line `<name> <image reference>` per image;
# what it builds and how long it took go to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
say() { echo "hoist node images: $*" >&2; }
names=(pause web webhook job)
command -v go >/dev/null || { say "Go is needed to build the test images (apt-get install golang, or /usr/local/go)"; exit 1; }
hash=$(
  { find test/images -type f | LC_ALL=C sort | xargs sha256sum; sha256sum scripts/node-images.sh; go version; } | sha256sum | cut -c1-16
)
out=${HOIST_CACHE:-$HOME/.cache/hoist}/node-images
archive=$out/$hash.tar
print() {
  echo "$archive"
  for n in "${names[@]}"; do echo "$n localhost/hoist-node/$n:$hash"; done
}
if [ -f "$archive" ]; then print; exit 0; fi

mkdir -p "$out"
exec 9>"$out/.build.lock"
flock 9
if [ -f "$archive" ]; then print; exit 0; fi
# shellcheck source=podman-env.sh
. scripts/podman-env.sh
ctx=$(mktemp -d "${TMPDIR:-/tmp}/hoist-node-images.XXXXXX")
trap 'rm -rf "$ctx"' EXIT
say "building ${names[*]} (static Go binaries on scratch) as localhost/hoist-node/*:$hash"
(cd test/images && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -ldflags "-s -w" -o "$ctx/bin/" "${names[@]/#/./}")
refs=()
for n in "${names[@]}"; do
  mkdir -p "$ctx/$n" && mv "$ctx/bin/$n" "$ctx/$n/$n"
  printf 'FROM scratch\nCOPY %s /%s\nUSER 65532:65532\nENTRYPOINT ["/%s"]\n' "$n" "$n" "$n" > "$ctx/$n/Containerfile"
  podman build --quiet --tag "localhost/hoist-node/$n:$hash" --file "$ctx/$n/Containerfile" "$ctx/$n" >/dev/null
  refs+=("localhost/hoist-node/$n:$hash")
done
podman save --quiet --format docker-archive --multi-image-archive -o "$ctx/images.tar" "${refs[@]}"
mv "$ctx/images.tar" "$archive"
# older archives are dead weight
find "$out" -name '*.tar' ! -name "$hash.tar" -delete
say "built ${#refs[@]} images in $((SECONDS - start))s ($(du -h "$archive" | cut -f1))"
print
