# convstream — common tasks. `make run` starts a worker with an embedded NATS
# server; `make test` runs every test (CI calls it through .ci/run).

GO        ?= go
PKGS      ?= ./...
BENCHTIME ?= 1s
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all build run test test-race test-short bench lint fmt vet staticcheck fuzz clean load

all: build

# build compiles every package and writes the binaries to bin/ (bin/worker,
# bin/convctl); `go install ./cmd/...` puts them in $GOBIN instead.
build:
	$(GO) build ./...
	$(GO) build -o bin/ ./cmd/...

# make run writes replies in-process with the built-in model (no key, no network):
# then `go run ./cmd/convctl chat chat-1 "hello"`. ARGS are passed to the worker, e.g. make run ARGS="--listen 127.0.0.1:4333 --http 127.0.0.1:8181".
run:
	$(GO) run ./cmd/worker --orchestrator builtin $(ARGS)

test:
	$(GO) vet $(PKGS)
	$(GO) test -count=1 -timeout 20m $(PKGS)
	@# bench/ is a module of its own, which ./... does not reach.
	$(MAKE) --no-print-directory -C bench test
	@# go test hides the output of passing packages; show the conformance summaries.
	@$(GO) test -count=1 -v -run 'TestConformance' ./conversation/ ./processors/ | grep -E 'conformance.*passed'
	@$(MAKE) --no-print-directory test-ts

test-race:
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

test-short:
	$(GO) test -short -count=1 $(PKGS)

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./conversation/ ./enginecore/ ./processors/ ./streams/... ./cmd/worker/

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./conversation/
	$(GO) test -run '^$$' -fuzz FuzzPipeline -fuzztime 30s ./processors/

# fuzz-ci runs every fuzz target (CI calls it after make test); their seed
# corpora are committed under each package's testdata/fuzz. Each target runs a
# fixed number of inputs, about 8 s on the 2-core machine, rather than a
# duration: a -fuzztime duration can fail with a bare "context deadline
# exceeded" when the deadline races a worker's last input (go.dev/issue/75804,
# Go 1.26; it failed CI on FuzzPipeline with no crasher written). FUZZTIME
# overrides every target's budget, e.g. FUZZTIME=60s or FUZZTIME=1000x.
.PHONY: fuzz-ci
fuzz-ci:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(or $(FUZZTIME),150000x) ./conversation/
	$(GO) test -run '^$$' -fuzz '^FuzzConversationAppend$$' -fuzztime $(or $(FUZZTIME),100000x) ./conversation/
	$(GO) test -run '^$$' -fuzz '^FuzzRawJSON$$' -fuzztime $(or $(FUZZTIME),150000x) ./conversation/
	$(GO) test -run '^$$' -fuzz '^FuzzCanonicalJSON$$' -fuzztime $(or $(FUZZTIME),150000x) ./conversation/
	$(GO) test -run '^$$' -fuzz '^FuzzPipeline$$' -fuzztime $(or $(FUZZTIME),150000x) ./processors/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeEvent$$' -fuzztime $(or $(FUZZTIME),12000x) ./streams/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeData$$' -fuzztime $(or $(FUZZTIME),15000x) ./streams/

# soak: the crash-loop soak test (build tag soak): cmd/worker as a process,
# SIGKILLed SOAK_KILLS times during a stream of SOAK_EVENTS events over
# SOAK_CONVERSATIONS conversations; every conversation must equal Parse.
SOAK_EVENTS ?= 100000
SOAK_CONVERSATIONS ?= 500
SOAK_KILLS ?= 20
.PHONY: soak
soak:
	SOAK_EVENTS=$(SOAK_EVENTS) SOAK_CONVERSATIONS=$(SOAK_CONVERSATIONS) SOAK_KILLS=$(SOAK_KILLS) \
		$(GO) test -tags soak -count=1 -timeout 60m -run '^TestCrashLoopSoak$$' -v ./cmd/worker/

# soak-ci: the same soak, small enough for CI (5 kills, 20,000 events over
# 100 conversations); its timeout leaves the test's own deadline (a minute
# before it) to report what did not converge.
.PHONY: soak-ci
soak-ci:
	SOAK_EVENTS=20000 SOAK_CONVERSATIONS=100 SOAK_KILLS=5 \
		$(GO) test -tags soak -count=1 -timeout 15m -run '^TestCrashLoopSoak$$' -v ./cmd/worker/

# upgrade-test: TestRollingUpgrade (internal/upgradetest, build tag
# upgrade) builds cmd/worker of the previous release from its commit (git
# archive of the history; modules from the cache or the proxy) and of this
# tree, and with events flowing rolls one NATS server's workers forward to
# this release and back, every conversation equal to Parse throughout
# (docs/operations.md, "Upgrades"). It skips itself, saying so, where git
# history lacks that commit (a shallow clone); UPGRADE_FROM=<commit> names
# another previous release.
.PHONY: upgrade-test
upgrade-test:
	$(GO) test -tags upgrade -count=1 -timeout 10m -run '^TestRollingUpgrade$$' -v ./internal/upgradetest/

# The lab lives in bench/, a Go module of its own (bench/README.md): the
# load generator convload, the echo worker, load-compare and the scale-out
# measurement. load, load-compare and scale run bench/Makefile's targets;
# variables given here (LOAD_ARGS, WORKER_ARGS, A, B, PAIRS, ...) pass on.
.PHONY: load load-compare scale
scale load load-compare:
	@$(MAKE) --no-print-directory -C bench $@

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet $(PKGS)

staticcheck:
	$(GO) run $(STATICCHECK) $(PKGS)

lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) run $(STATICCHECK) $(PKGS)

clean:
	rm -rf data bin

# helm-lint checks the Helm chart deploy/helm/convstream, offline. First the
# Go tests of deploy/helm (a module of its own, so the Helm SDK stays out of
# go.mod) render it with the Helm SDK for the value sets in
# deploy/helm/testdata and decode every manifest strictly into typed
# Kubernetes objects. Then `helm lint --strict` and `helm template`, from the
# helm module, run on a copy of the chart without its optional NATS
# dependency (declared, disabled by default, not downloaded: helm would
# otherwise refuse it), and the tests decode what `helm template` wrote.
HELM              ?= helm.sh/helm/v3/cmd/helm@v3.22.0
HELM_KUBE_VERSION ?= 1.33.0

.PHONY: helm-lint
helm-lint:
	cd deploy/helm && $(GO) vet ./... && $(GO) test -count=1 ./...
	@# As the README says, from a clone: no network, no --kube-version.
	$(GO) run $(HELM) template demo deploy/helm/convstream >/dev/null
	$(GO) run $(HELM) template demo deploy/helm/convstream --set nats.enabled=true >/dev/null
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	(cd deploy/helm && $(GO) run ./cmd/offlinechart convstream "$$tmp/convstream"); \
	for values in "" deploy/helm/testdata/values-*.yaml; do \
		name=$$(basename "$${values:-defaults}" .yaml); \
		echo "helm lint --strict, helm template: $$name"; \
		$(GO) run $(HELM) lint --strict --quiet --kube-version $(HELM_KUBE_VERSION) \
			$${values:+--values "$$values"} "$$tmp/convstream"; \
		$(GO) run $(HELM) template demo "$$tmp/convstream" --namespace chat \
			--kube-version $(HELM_KUBE_VERSION) $${values:+--values "$$values"} \
			--output-dir "$$tmp/rendered/$$name" >/dev/null; \
	done; \
	cd deploy/helm && CONVSTREAM_HELM_RENDERED="$$tmp/rendered" \
		$(GO) test -count=1 -run '^TestRenderedDir$$' -v .

# ui rebuilds the /ui viewer's bundle (ui/web/*.js with the TypeScript
# client @convstream/client and its @nats-io packages) into
# ui/static/viewer.js: npm ci in clients/typescript, where
# package-lock.json pins them, then esbuild (scripts/build-viewer.mjs).
# The bundle is committed and used as it is: build, run and test need only
# Go. TestViewerBundle (ui/) fails when the bundle was not built from the
# current sources, by the content hash stamped in its banner: run make ui
# after changing ui/web or clients/typescript/src.
.PHONY: ui
ui:
	@command -v npm >/dev/null || { echo "make ui needs npm (Node 20)"; exit 1; }
	cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build:viewer

# test-ts runs the tests of the TypeScript client (clients/typescript):
# the generated types against schemas/, tsc (test/strict-types.ts under
# --strict among them), and vitest against a worker it builds and starts,
# over TCP and WebSocket. make test runs it; without npm, or with its
# registry out of reach, it says so and skips them.
NPM_FLAGS := --no-audit --no-fund --loglevel=error --fetch-retries=0 --fetch-timeout=20000
.PHONY: test-ts
test-ts:
	@if ! command -v npm >/dev/null; then echo "SKIP clients/typescript tests: npm not found (Node 20 and npm run them)"; exit 0; fi; \
	cd clients/typescript; \
	if ! npm ping $(NPM_FLAGS) >/dev/null 2>&1; then \
		echo "SKIP clients/typescript tests: npm registry $$(npm config get registry) out of reach"; exit 0; fi; \
	set -e; npm ci $(NPM_FLAGS); npm test

# image builds the container image without a Docker daemon (deploy/image, a
# module of its own using go-containerregistry): static worker and convctl
# for linux/amd64 and linux/arm64, user 65532, OCI labels, as an OCI image
# layout in IMAGE_DIR tagged with IMAGE_VERSION (default: git describe).
# Reproducible: every timestamp is SOURCE_DATE_EPOCH, else the commit's.
# image-test builds it and checks it (deploy/image's tests open the layout,
# check entrypoint, user, files, labels and platforms, run the amd64
# binaries with --version, build again for the same digest, and compare
# the Dockerfile with the Go builder).
IMAGE_DIR     ?= bin/image
IMAGE_VERSION ?=
.PHONY: image image-test
image:
	cd deploy/image && $(GO) run ./cmd/buildimage --module ../.. --out $(abspath $(IMAGE_DIR)) \
		$(if $(IMAGE_VERSION),--version $(IMAGE_VERSION))

image-test: image
	cd deploy/image && $(GO) vet ./... && \
		CONVSTREAM_IMAGE_LAYOUT=$(abspath $(IMAGE_DIR)) $(GO) test -count=1 -timeout 30m -v -run 'TestImage|TestDockerfileMatches' . && \
		$(GO) test -count=1 -timeout 30m -run 'TestReproducible' .
