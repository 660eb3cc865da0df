#!/usr/bin/env bash
# build.sh NAME... — builds the named control-plane binaries (and kro, the peer
# controller the conformance and differential tests run) from the versions
# pinned in tools/go.mod (kwok's and kro's in tools/kwok and tools/kro) into a
# per-version cache outside the checkout and links them into bin/ of the
# repository. A binary already in the cache is only linked, so a second
# checkout on the same machine builds nothing.
#
# Environment: RESYNCD_CACHE_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/resyncd).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

kube_version=$(cd "$here" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
etcd_version=$(cd "$here" && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
kwok_version=$(cd "$here/kwok" && go list -m -f '{{.Version}}' sigs.k8s.io/kwok)
kro_version=$(cd "$here/kro" && go list -m -f '{{.Version}}' github.com/kubernetes-sigs/kro)
chainsaw_version=$(cd "$here/chainsaw" && go list -m -f '{{.Version}}' github.com/kyverno/chainsaw)
cache_root=${RESYNCD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/resyncd}
cache="$cache_root/k8s-$kube_version"

# Package to build for each binary name (each needs a `tool` line, or a
# main package, in this module).
pkg_for() {
	case "$1" in
	kube-apiserver | kube-controller-manager | kube-scheduler) echo "k8s.io/kubernetes/cmd/$1" ;;
	etcd) echo ./etcd ;;
	kwok) echo sigs.k8s.io/kwok/cmd/kwok ;;
	kro) echo github.com/kubernetes-sigs/kro/cmd/controller ;;
	chainsaw) echo github.com/kyverno/chainsaw ;;
	*) echo "build.sh: unknown binary $1 (known: kube-apiserver kube-controller-manager kube-scheduler etcd kwok kro chainsaw)" >&2; return 1 ;;
	esac
}

# The module each binary is built in: kwok, kro and chainsaw pin their own
# Kubernetes libraries.
module_for() {
	case "$1" in
	kwok) echo "$here/kwok" ;;
	kro) echo "$here/kro" ;;
	chainsaw) echo "$here/chainsaw" ;;
	*) echo "$here" ;;
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
	kwok) echo "$cache/kwok-$kwok_version" ;;
	kro) echo "$cache/kro-$kro_version" ;;
	chainsaw) echo "$cache/chainsaw-$chainsaw_version" ;;
	*) echo "$cache/$1" ;;
	esac
}

# The Go toolchain each binary is built with: chainsaw v0.2.12 implements
# testing's private interface as Go 1.24 had it, and does not build with a
# later Go; the go command fetches that toolchain from the module proxy.
toolchain_for() {
	case "$1" in
	chainsaw) echo go1.24.6 ;;
	*) echo "${GOTOOLCHAIN:-auto}" ;;
	esac
}

ldflags_for() {
	case "$1" in
	etcd) echo "-s -w" ;;
	kwok) echo "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${kwok_version#v}" ;;
	kro | chainsaw) echo "-s -w" ;;
	*) kube_ldflags ;;
	esac
}

mkdir -p "$cache" "$root/bin"
for name in "$@"; do
	pkg=$(pkg_for "$name")
	out=$(cache_file "$name")
	if [ ! -x "$out" ]; then
		echo "build.sh: building $name into $out (the first kube-apiserver build takes about 10 minutes on 2 cores)" >&2
		start=$(date +%s)
		# A private temporary name, then an atomic rename: two checkouts
		# building at once never see a half-written binary.
		(cd "$(module_for "$name")" && GOTOOLCHAIN=$(toolchain_for "$name") CGO_ENABLED=0 go build -trimpath -ldflags "$(ldflags_for "$name")" -o "$out.tmp.$$" "$pkg")
		mv "$out.tmp.$$" "$out"
		echo "build.sh: built $name in $(($(date +%s) - start))s" >&2
	fi
	ln -sfn "$out" "$root/bin/$name"
	if [ "$name" = kwok ]; then
		# kwok's Stages (node initialise and heartbeat, pod ready, complete
		# and delete) ship as YAML in its module: keep them beside the binary.
		stages="$cache/kwok-$kwok_version-stages"
		if [ ! -d "$stages" ]; then
			src=$(cd "$here/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage
			mkdir -p "$stages.tmp.$$"
			cp "$src/node/fast/node-initialize.yaml" "$src/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml" \
				"$src/pod/fast/pod-ready.yaml" "$src/pod/fast/pod-complete.yaml" "$src/pod/fast/pod-delete.yaml" "$stages.tmp.$$/"
			chmod 644 "$stages.tmp.$$"/*.yaml
			mv "$stages.tmp.$$" "$stages"
		fi
		ln -sfn "$stages" "$root/bin/kwok-stages"
	fi
	if [ "$name" = kro ]; then
		# kro's own CRDs (ResourceGraphDefinition, GraphRevision) at the
		# pinned version, as its Helm chart installs them.
		crds="$cache/kro-$kro_version-crds"
		if [ ! -d "$crds" ]; then
			src=$(cd "$here/kro" && go list -m -f '{{.Dir}}' github.com/kubernetes-sigs/kro)/helm/crds
			mkdir -p "$crds.tmp.$$"
			cp "$src"/*.yaml "$crds.tmp.$$/"
			chmod 644 "$crds.tmp.$$"/*.yaml
			mv "$crds.tmp.$$" "$crds"
		fi
		ln -sfn "$crds" "$root/bin/kro-crds"
	fi
done
