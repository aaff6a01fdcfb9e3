#!/usr/bin/env bash
# Sourced (`. scripts/podman-env.sh`) by the image build and the container tests: installs podman
# and runc with apt-get when missing, and points podman at a configuration of Hoist's own under
# ${HOIST_CACHE:-~/.cache/hoist}/podman, so the machine's global container configuration
# (/etc/containers, /var/lib/containers) is never read or written:
#   - containers.conf: runtime runc (crun fails on cgroup v1 + a cgroup2 "unified" mount), and
#     ulimits below the hard limits of VMs that do not grant CAP_SYS_RESOURCE;
#   - storage.conf: image and container storage under the cache;
#   - registries.conf: no registry to search, so a short name never resolves to a pull.
# Exports CONTAINERS_CONF, CONTAINERS_STORAGE_CONF, CONTAINERS_REGISTRIES_CONF and HOIST_PODMAN_DIR.
# Returns non-zero with a message on stderr when podman cannot be installed.

hoist_podman_setup() {
  local need=()
  command -v podman >/dev/null || need+=(podman)
  command -v runc >/dev/null || need+=(runc)
  if [ ${#need[@]} -gt 0 ]; then
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
    echo "hoist podman: installing ${need[*]} with apt-get" >&2
    # --no-install-recommends: no buildah, slirp4netns or fuse-overlayfs; rootful podman needs none
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null ||
      { DEBIAN_FRONTEND=noninteractive $sudo apt-get update -qq >/dev/null &&
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; } ||
      { echo "hoist podman: could not install ${need[*]}" >&2; return 1; }
    # the package enables a socket-activated system service; Hoist starts its own socket when needed
    if command -v systemctl >/dev/null 2>&1; then $sudo systemctl disable --now podman.socket >/dev/null 2>&1 || true; fi
  fi

  local dir=${HOIST_CACHE:-$HOME/.cache/hoist}/podman
  mkdir -p "$dir/storage" "$dir/run"
  local nofile
  nofile=$(ulimit -Hn)
  [ "$nofile" = unlimited ] || [ "$nofile" -gt 20000 ] && nofile=20000
  cat > "$dir/containers.conf.tmp" <<CONF
# written by scripts/podman-env.sh: Hoist's own podman settings (CONTAINERS_CONF)
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=4096:4096"]
[engine]
runtime = "runc"
CONF
  cat > "$dir/storage.conf.tmp" <<CONF
# written by scripts/podman-env.sh: Hoist's own image storage (CONTAINERS_STORAGE_CONF)
[storage]
driver = "overlay"
graphroot = "$dir/storage"
runroot = "$dir/run"
CONF
  cat > "$dir/registries.conf.tmp" <<CONF
# written by scripts/podman-env.sh: images are built locally, never searched for (CONTAINERS_REGISTRIES_CONF)
unqualified-search-registries = []
short-name-mode = "disabled"
CONF
  local f
  for f in containers storage registries; do mv "$dir/$f.conf.tmp" "$dir/$f.conf"; done
  export CONTAINERS_CONF=$dir/containers.conf
  export CONTAINERS_STORAGE_CONF=$dir/storage.conf
  export CONTAINERS_REGISTRIES_CONF=$dir/registries.conf
  export HOIST_PODMAN_DIR=$dir
}

hoist_podman_setup
