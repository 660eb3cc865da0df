#!/usr/bin/env bash
# build.sh NAME... — builds the named control-plane binaries from the versions
# pinned in tools/go.mod into a per-version cache outside the checkout and
# links them into bin/ of the repository. A binary already in the cache is
# only linked, so a second checkout on the same machine builds nothing.
#
# Environment: RESYNCD_CACHE_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/resyncd).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

kube_version=$(cd "$here" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
etcd_version=$(cd "$here" && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
cache_root=${RESYNCD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/resyncd}
cache="$cache_root/k8s-$kube_version"

# Package to build for each binary name. Add kube-controller-manager,
# kube-scheduler or kwok here (and a `tool` line in go.mod) to make them available.
pkg_for() {
	case "$1" in
	kube-apiserver) echo k8s.io/kubernetes/cmd/kube-apiserver ;;
	etcd) echo ./etcd ;;
	*) echo "build.sh: unknown binary $1 (known: kube-apiserver etcd)" >&2; return 1 ;;
	esac
}

# The same stamp kubernetes' own build writes (hack/lib/version.sh), so that
# `kube-apiserver --version` and the /version endpoint report the real release.
kube_ldflags() {
	local v=${kube_version#v} major minor
	major=${v%%.*}
	minor=${v#*.}
	minor=${minor%%.*}
	local f=""
	for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
		f+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
		f+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
	done
	echo "-s -w$f"
}

# The cache file of each binary: kube binaries share the Kubernetes version
# of the directory; etcd is pinned on its own, so its file carries its version.
cache_file() {
	case "$1" in
	etcd) echo "$cache/etcd-$etcd_version" ;;
	*) echo "$cache/$1" ;;
	esac
}

ldflags_for() {
	case "$1" in
	etcd) echo "-s -w" ;;
	*) kube_ldflags ;;
	esac
}

mkdir -p "$cache" "$root/bin"
for name in "$@"; do
	pkg=$(pkg_for "$name")
	out=$(cache_file "$name")
	if [ ! -x "$out" ]; then
		echo "build.sh: building $name into $out (kube-apiserver: about 10 minutes on 2 cores the first time)" >&2
		start=$(date +%s)
		# A private temporary name, then an atomic rename: two checkouts
		# building at once never see a half-written binary.
		(cd "$here" && CGO_ENABLED=0 go build -trimpath -ldflags "$(ldflags_for "$name")" -o "$out.tmp.$$" "$pkg")
		mv "$out.tmp.$$" "$out"
		echo "build.sh: built $name in $(($(date +%s) - start))s" >&2
	fi
	ln -sfn "$out" "$root/bin/$name"
done
