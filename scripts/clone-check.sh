#!/usr/bin/env bash
# The repository stands alone: clones the current checkout (its committed HEAD) into an empty
# temporary directory — nothing beside it — and runs `npm ci && npm run demo` there, which must end
# with the argo-rollouts BundleDeployment Installed=True and Healthy=True. With --test it then runs
# `npm test` in that clone too and copies its vitest report (.tmp/vitest.json) back to the
# checkout, so CI's counts are those of a clone with nothing beside it. The Go-built tools come
# from the usual cache (${HOIST_CACHE:-~/.cache/hoist}).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
run_tests=false
[ "${1:-}" = "--test" ] && run_tests=true
start=$SECONDS
dir=$(mktemp -d "${TMPDIR:-/tmp}/hoist-clone-XXXXXX")
trap 'rm -rf "$dir"' EXIT
say() { echo "hoist clone check: $* ($((SECONDS - start))s)" >&2; }

git clone --quiet --no-hardlinks "$src" "$dir/hoist"
cd "$dir/hoist"
say "cloned $(git rev-parse --short HEAD) into $dir/hoist; npm ci"
npm ci --prefer-offline --no-audit --no-fund --loglevel=error </dev/null >"$dir/npm-ci.log" 2>&1 || { cat "$dir/npm-ci.log" >&2; say "npm ci failed"; exit 1; }
say "npm run demo"
if ! npm run demo </dev/null >"$dir/demo.log" 2>&1; then
  tail -40 "$dir/demo.log" >&2
  say "npm run demo failed in the clone"
  exit 1
fi
for cond in Installed Healthy; do
  if ! grep -Eq "^ +$cond +True " "$dir/demo.log"; then
    tail -40 "$dir/demo.log" >&2
    say "the demo's BundleDeployment is not $cond=True"
    exit 1
  fi
done
say "ok: a clone with nothing beside it runs the demo to Installed=True, Healthy=True"
$run_tests || exit 0

say "npm test in the clone"
rc=0
npm test </dev/null || rc=$?
mkdir -p "$src/.tmp"
[ -f .tmp/vitest.json ] && cp .tmp/vitest.json "$src/.tmp/vitest.json"
say "npm test in the clone exited $rc"
exit $rc
