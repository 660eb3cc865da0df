# resyncd — `make help` lists the targets.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# Control-plane binaries come from tools/ (built once per version, cached
# outside the checkout, linked into bin/).
CONTROL_PLANE := kube-apiserver etcd kube-controller-manager kube-scheduler kwok
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
# -count=1: the bench and drill tests build resyncd with `go build`, which the
# test cache cannot see; every `make test` runs every test.
GO_TEST_FLAGS ?= -count=1 -timeout 30m
IMAGE ?= ghcr.io/resyncd/resyncd
# Modules of their own beside the daemon's, as tools/ is, so that what they
# pull (controller-runtime, the Helm SDK, Prometheus's query engine and TSDB)
# stays out of the daemon's go.mod: bench/ and deploy/ (the chart's and the
# dashboard's tests). Their go.mod replaces the daemon's module with ../.
MODULES := bench deploy
RUN_DIR := $(CURDIR)/.run

# OR_REAP ends a command that runs control planes: if it fails, make reap
# stops what it left running, and the failure's status is kept.
OR_REAP = || { status=$$?; $(MAKE) --no-print-directory reap; exit $$status; }

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/resyncd
	go build -ldflags "$(LDFLAGS)" -o bin/resyncd ./cmd/resyncd

.PHONY: bins
bins: ## Build (first time: about 10 minutes) or link the cached etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok into bin/
	tools/build.sh $(CONTROL_PLANE)

.PHONY: kro
kro: ## Build (first time: about 8 minutes) or link kro's controller and its CRDs, and chainsaw (kro's e2e runner), at the versions tools/kro and tools/chainsaw pin, into bin/
	tools/build.sh kro chainsaw

.PHONY: conformance
conformance: bins build kro ## kro's own e2e scenarios (chainsaw, at the kro version tools/kro pins) against resyncd serving RGDs on a local control plane, then the way over from kro (kro's controller makes an instance's children, resyncd takes them over), then every RGD of testdata/kro and kro's examples/ reconciled by kro and by resyncd, compared (about 6 minutes once built): docs/conformance.md, docs/differential.md
	go build -o bin/devcluster ./cmd/devcluster
	tools/conformance.sh $(OR_REAP)
	RESYNCD_DIFFERENTIAL_REPORT=$(CURDIR)/docs/differential.md go test -count=1 -timeout 30m -run 'TestMigrationFromKro$$|TestDifferentialKro$$' -v ./daemon 2>&1 | grep -E '^(---|ok|FAIL|PASS)|_test.go:|^ +'; test $${PIPESTATUS[0]} -eq 0

# kro's controller alone, which make test's bench harness and migration test
# run (make kro adds chainsaw, which only make conformance runs).
.PHONY: kro-controller
kro-controller:
	tools/build.sh kro

# make test runs the modules' tests one module after another (at once,
# the bench harness's control planes beside the drills' put the drills'
# reconnect bounds past what 2 cores give), hands them the resyncd binary
# `make build` built, and keeps each module's test events for the table of
# times it prints at the end.
TEST_MODULES := . $(MODULES) tools/image tools/testrun

.PHONY: test
test: bins kro-controller build test-tools ## Run every test of every module (the daemon's, bench/, deploy/, tools/) against a real kube-apiserver + etcd, and kro's controller beside resyncd, then the time each package took
	go vet ./...
	for m in $(filter-out .,$(TEST_MODULES)); do (cd $$m && go vet ./...); done
	rm -rf $(RUN_DIR)/test/events && mkdir -p $(RUN_DIR)/test/events
	start=$$(date +%s); status=0; \
	for m in $(TEST_MODULES); do \
		name=$$(echo "$$m" | tr / -); [ "$$m" != . ] || name=resyncd; \
		(cd $$m && RESYNCD_TEST_BINARY=$(CURDIR)/bin/resyncd $(CURDIR)/bin/gotestsum --format pkgname-and-test-fails --hide-summary skipped \
			--jsonfile $(RUN_DIR)/test/events/$$name.json -- $(GO_TEST_FLAGS) ./...) || status=$$?; \
	done; \
	bin/testrun $(RUN_DIR)/test/events/*.json; echo "make test: $$(($$(date +%s) - start)) s of tests, status $$status"; \
		$(MAKE) --no-print-directory reap; exit $$status

# gotestsum (make test's runner) and testrun (its table of times), at the
# versions tools/testrun pins.
.PHONY: test-tools
test-tools:
	cd tools/testrun && go build -o ../../bin/gotestsum gotest.tools/gotestsum && go build -o ../../bin/testrun .

.PHONY: test-drills
test-drills: bins ## The drills on a living local cluster, then the config, renderer, graph and ring-Lease fuzzers for 30 s each (make test runs the drills too)
	go test $(GO_TEST_FLAGS) ./drills $(OR_REAP)
	go test -run '^$$' -fuzz FuzzLoad -fuzztime 30s ./config
	go test -run '^$$' -fuzz FuzzRender -fuzztime 30s ./desired
	go test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./desired/graph
	go test -run '^$$' -fuzz FuzzDecode -fuzztime 30s ./shard
	go test -run '^$$' -fuzz FuzzRender -fuzztime 30s ./desired/graph

.PHONY: run
run: bins build ## Start a local cluster (fake nodes), install the CRD and samples, run resyncd against it (Ctrl-C stops all)
	go build -o bin/devcluster ./cmd/devcluster
	bin/devcluster --dir $(RUN_DIR) -- bin/resyncd run --config testdata/config/local.yaml

.PHONY: image
image: ## Build the container image as bin/resyncd-image.tar, without a Docker engine (docker/podman load, kind load image-archive)
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -ldflags "$(LDFLAGS) -s -w" -o bin/linux-amd64/resyncd ./cmd/resyncd
	cd tools/image && go run . -binary ../../bin/linux-amd64/resyncd -tag $(IMAGE):$(VERSION) -version $(VERSION) -out ../../bin/resyncd-image.tar

.PHONY: helm-lint
helm-lint: bins ## helm lint --strict of the chart with the Helm SDK, and its values schema
	cd deploy && go test -count=1 -run 'TestChartLint|TestChartRejectsBadValues' .

BENCH_FLAGS ?=

# The bench's command, which make bench, bench-scale, bench-kro and
# bench-quick run.
.PHONY: bench-tool
bench-tool:
	cd bench && go build -o ../bin/bench .
BENCH_RESULTS := bench/results/$(shell date -u +%Y-%m-%d).json

.PHONY: bench
bench: bins build kro-controller bench-tool ## resyncd's fixed part with 10 parents; at N = 1,000: resyncd against controller-runtime (1 and 8 workers), the raw-SSA floor and a raw LIST, among unrelated objects, over time, under churn and in drift latency (at each interval), and kro v0.9.4's controller against resyncd serving the same RGD (cold, quiet, drift, churn) (about 30 minutes on 2 cores): docs/benchmarks.md and its plots, bench/results/; BENCH_FLAGS="-baseline OLD" adds resyncd run with the build OLD, side by side (an A/B)
	bin/bench -sizes 1000 -cold-reps-up-to 0 -reps 3 -untargeted-rounds 1 -skip resyncd-one-namespace,resyncd-server,resyncd-2-clusters -tradeoff-n 1000 -fixed-n 10 -kro-n 1000 -kro-chain-n 1000 -kro-chain-kro=false -out $(BENCH_RESULTS) -doc docs/benchmarks.md $(BENCH_FLAGS) $(OR_REAP)

.PHONY: bench-scale
bench-scale: bins build bench-tool ## resyncd, the raw-SSA floor, the raw LIST and controller-runtime at N = 1,000, 5,000 and 20,000 (cold once at 20,000), with their targets at 5,000: the cost per parent and its slope; resyncd with N parents in one namespace up to 5,000; one resyncd run against three sharing the work at N = 5,000 and 20,000, against the fixed part; at 1,000 the driftCheck server, two clusters, and the passes to converge a graph four deep against one deep: docs/benchmarks-scale.md and its plots, bench/results/
	bin/bench -sizes 1000,5000,20000 -reps 3 -only resyncd,resyncd-one-namespace,resyncd-server,resyncd-2-clusters,raw-ssa-floor,controller-runtime,resyncd-ring-3,graph-depth -ring-n 5000,20000 -depth-n 1000 -fixed-n 10 -out bench/results/$(shell date -u +%Y-%m-%d)-scale.json -doc docs/benchmarks-scale.md $(BENCH_FLAGS) $(OR_REAP)

.PHONY: bench-kro
bench-kro: bins build kro-controller bench-tool ## kro v0.9.4's controller against resyncd serving the same RGD at N = 5,000 (cold, with kro's chart's defaults and its tuning page's settings; quiet; drift; churn), and the four-deep chain at 1,000 by both (about an hour on 2 cores): docs/benchmarks-kro.md and its plots, bench/results/
	bin/bench -sizes 5000 -only kro -kro-n 5000 -kro-chain-n 1000 -out bench/results/$(shell date -u +%Y-%m-%d)-kro.json -doc docs/benchmarks-kro.md $(BENCH_FLAGS) $(OR_REAP)

.PHONY: bench-quick
bench-quick: bins build kro-controller bench-tool ## The bench at N = 200, one resyncd run against three sharing the work among them, kro against resyncd (about 8 minutes), for development: .run/bench/quick.md; BENCH_FLAGS="-profile DIR" adds pprof profiles
	bin/bench -sizes 200 -reps 3 -depth-n 200 -ring-n 200 -fixed-n 10 -kro-n 200 -kro-chain-n 200 -out $(RUN_DIR)/bench/quick.json -doc $(RUN_DIR)/bench/quick.md $(BENCH_FLAGS) $(OR_REAP)

GOLANGCI_LINT := bin/golangci-lint-v2.15.0

$(GOLANGCI_LINT):
	GOBIN=$(CURDIR)/bin go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
	mv bin/golangci-lint $@

.PHONY: lint
lint: $(GOLANGCI_LINT) ## golangci-lint (.golangci.yml: errorlint, revive, staticcheck, promlinter, importas, gofmt), go mod tidy checks, and kro's RGD CRD as tools/kro pins it
	$(GOLANGCI_LINT) run ./...
	for m in $(MODULES); do (cd $$m && ../$(GOLANGCI_LINT) run ./...); done
	cd tools/image && ../../$(GOLANGCI_LINT) run ./...
	cd tools/testrun && ../../$(GOLANGCI_LINT) run ./...
	go mod tidy -diff
	for m in $(MODULES); do (cd $$m && go mod tidy -diff); done
	cd tools && go mod tidy -diff
	cd tools/image && go mod tidy -diff
	cd tools/testrun && go mod tidy -diff
	cd tools/kro && go mod tidy -diff
	cd tools/chainsaw && GOTOOLCHAIN=go1.24.6 go mod tidy -diff
	cmp daemon/crds/kro.run_resourcegraphdefinitions.yaml "$$(cd tools/kro && go list -m -f '{{.Dir}}' github.com/kubernetes-sigs/kro)/helm/crds/kro.run_resourcegraphdefinitions.yaml"

.PHONY: reap
reap: # Stop control-plane processes of this checkout that a killed test left behind, API server first
	@for p in kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do \
		pat='^$(CURDIR)/bin/'$$p' '; \
		pgrep -f "$$pat" >/dev/null || continue; \
		echo "reap: stopping a leftover $$p"; pkill -TERM -f "$$pat" || true; \
		for i in $$(seq 20); do pgrep -f "$$pat" >/dev/null || break; sleep 0.5; done; \
		pkill -KILL -f "$$pat" || true; \
	done

.PHONY: clean
clean: ## Remove bin/ and .run/ (the binary cache outside the checkout stays)
	rm -rf bin $(RUN_DIR)
