#!/usr/bin/env bash
# conformance.sh — kro's own e2e suite (test/e2e/chainsaw of the kro version
# tools/kro pins) against resyncd serving the ResourceGraphDefinitions of a
# local control plane; the scenarios of testdata/conformance/skip.txt are
# left out, with their reasons. Writes the report, pass or fail per scenario,
# to docs/conformance.md; exits non-zero when a scenario run failed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
dir=$root/.run/conformance
rm -rf "$dir"
mkdir -p "$dir"
kro_dir=$(cd tools/kro && go list -m -f '{{.Dir}}' github.com/kubernetes-sigs/kro)
kro_version=$(cd tools/kro && go list -m -f '{{.Version}}' github.com/kubernetes-sigs/kro)
cp -r "$kro_dir/test/e2e/chainsaw" "$dir/suite"
chmod -R u+w "$dir/suite"
{ grep -v '^#' testdata/conformance/skip.txt || true; } | while IFS=: read -r name _; do
	[ -n "$name" ] && rm -rf "${dir:?}/suite/$name"
done

bin/devcluster --dir "$dir/cluster" --samples "" -- bin/resyncd run --config testdata/config/conformance.yaml >"$dir/resyncd.log" 2>&1 &
cluster=$!
trap 'kill -INT $cluster 2>/dev/null; wait $cluster 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
	if curl -fsS http://127.0.0.1:18081/readyz >/dev/null 2>&1; then break; fi
	if ! kill -0 $cluster 2>/dev/null; then cat "$dir/resyncd.log" >&2; exit 1; fi
	sleep 1
done
status=0
KUBECONFIG=$dir/cluster/kubeconfig bin/chainsaw test --test-dir "$dir/suite" --parallel 2 --no-color \
	--report-format JSON --report-path "$dir" --report-name report >"$dir/chainsaw.log" 2>&1 || status=$?
(cd tools && go run ./conformance -report "$dir/report.json" -log "$dir/chainsaw.log" -skip ../testdata/conformance/skip.txt \
	-kro "$kro_version" -chainsaw "$(cd chainsaw && go list -m -f '{{.Version}}' github.com/kyverno/chainsaw)" -out ../docs/conformance.md)
echo "conformance: docs/conformance.md; chainsaw's log: $dir/chainsaw.log, resyncd's: $dir/resyncd.log"
exit $status
