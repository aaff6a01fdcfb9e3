#!/usr/bin/env bash
# Installs (once per machine) the Debian packages the tests and benchmarks run as real peers:
# docker-registry (the CNCF distribution registry), skopeo (reference OCI client), apache2-utils
# (htpasswd for the registry's Basic auth), git (git http-backend), openssl (test PKI), and for the
# local control plane's real node containerd, the CNI plugins (bridge, host-local, portmap, in
# /usr/lib/cni), iptables and conntrack (kube-proxy), and openssh-server (sshd: the git-over-SSH tests
# start their own on loopback; the package also brings the ssh client the git source runs).
set -euo pipefail
need=()
command -v docker-registry >/dev/null || need+=(docker-registry)
command -v skopeo >/dev/null || need+=(skopeo)
command -v htpasswd >/dev/null || need+=(apache2-utils)
[ -x /usr/lib/git-core/git-http-backend ] || need+=(git)
command -v openssl >/dev/null || need+=(openssl)
command -v curl >/dev/null || need+=(curl)
command -v podman >/dev/null || need+=(podman)
command -v runc >/dev/null || need+=(runc)
command -v containerd >/dev/null || need+=(containerd)
[ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
command -v iptables >/dev/null || need+=(iptables)
command -v conntrack >/dev/null || need+=(conntrack)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
[ ${#need[@]} -eq 0 ] && exit 0
echo "hoist packages: installing ${need[*]} with apt-get" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo -n"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# the package enables a system service we don't want: tests start their own registries
# (and podman's API socket: the tests start their own on a private path; and containerd: the
# control plane starts its own with its own root, state and socket; and sshd: the SSH tests start
# their own on a loopback port with their own host key)
if command -v systemctl >/dev/null 2>&1; then
  for unit in docker-registry podman.socket containerd ssh ssh.socket; do $sudo systemctl disable --now "$unit" >/dev/null 2>&1 || true; done
fi
echo "hoist packages: installed ${need[*]}" >&2
