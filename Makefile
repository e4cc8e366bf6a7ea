# paddlejob — run `make help` for the targets.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

LOCALBIN := $(CURDIR)/bin
CONTROLLER_GEN := $(LOCALBIN)/controller-gen
HELM := $(LOCALBIN)/helm
KUSTOMIZE := $(LOCALBIN)/kustomize
GOTESTSUM := $(LOCALBIN)/gotestsum
export GONOSUMDB := k8s.io
# envtest's default start timeout is tight on two busy cores.
export KUBEBUILDER_CONTROLPLANE_START_TIMEOUT ?= 120s

GO_TEST_FLAGS ?=

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code, and the known failures' section of docs/paddle-known-issues.md from internal/paddlefailure/signatures.yaml.
	$(CONTROLLER_GEN) object paths="./api/..."
	go run ./hack/failuredocs

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRD and RBAC manifests from the markers.
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true rbac:roleName=paddlejob-operator webhook \
		paths="./api/..." paths="./internal/operator/..." \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac \
		output:webhook:artifacts:config=config/webhook
	go run ./hack/trimcrd config/crd/bases/*.yaml
	go run ./hack/chartgen

GENERATED := api/v1/zz_generated.deepcopy.go config/crd/bases config/rbac/role.yaml config/webhook/manifests.yaml \
	charts/paddlejob/crds charts/paddlejob/templates/_generated.tpl docs/paddle-known-issues.md

.PHONY: verify-generated
verify-generated: $(CONTROLLER_GEN) ## Fail when the generated files are not what the markers generate.
	@sum() { find $(GENERATED) -type f | sort | xargs sha256sum; }; \
	before=$$(sum); $(MAKE) -s generate manifests >/dev/null; after=$$(sum); \
	[ "$$before" = "$$after" ] || { echo "generated files were stale (now regenerated): review and commit them"; diff <(echo "$$before") <(echo "$$after"); exit 1; }

# The dashboard's page (internal/dashboard/web: TypeScript, Preact, uPlot,
# built by Vite) is committed built, in web/dist, which go:embed puts in the
# binary: go build, go install and go vet work on a clean clone without
# Node.js. Changing web/src needs Node.js 20+ and npm; CI checks web/dist is
# what the sources and package-lock.json build.
WEB := internal/dashboard/web

.PHONY: web
web: ## Build the dashboard's page into internal/dashboard/web/dist (npm ci, then Vite; needs Node.js and npm).
	cd $(WEB) && npm ci --no-audit --no-fund --loglevel=error && npm run build

.PHONY: verify-web
verify-web: ## Fail when internal/dashboard/web/dist is not what its sources build.
	@sum() { find $(WEB)/dist -type f | sort | xargs sha256sum; }; \
	before=$$(sum); $(MAKE) -s web >/dev/null; after=$$(sum); \
	[ "$$before" = "$$after" ] || { echo "internal/dashboard/web/dist was stale (now rebuilt): review and commit it"; diff <(echo "$$before") <(echo "$$after"); exit 1; }

.PHONY: fmt
fmt: ## Run gofmt.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: ## Check formatting, vet, that no Go or Python file or function grows past its size limit (hack/checksize), and the operator's import rules (hack/importrules).
	@out=$$(gofmt -l $$(git ls-files '*.go')); [ -z "$$out" ] || { echo "gofmt needed on:"; echo "$$out"; exit 1; }
	go run ./hack/checksize .
	go run ./hack/importrules .
	go vet ./...
	go vet -tags integration ./...

##@ Test

.PHONY: envtest
envtest: ## Build (once, cached outside the repo) the kube-apiserver and etcd the integration tests run, and the controller manager whose endpoint controllers the Service proxy's test runs.
	@mkdir -p $(LOCALBIN)
	@go run ./hack/kubebin -components etcd,kube-apiserver,kube-controller-manager > $(LOCALBIN)/.envtest-assets

.PHONY: addons
addons: ## Build (once, cached outside the repo) the local cluster's DNS server (CoreDNS) and the add-ons the gang-scheduling tests run: Volcano, scheduler-plugins, Kueue.
	@go run ./hack/kubebin -components etcd -cluster-dns -addons volcano,coscheduling,kueue >/dev/null

.PHONY: node-runtime
node-runtime: ## Build (once, cached outside the repo) the container-runtime node's kubelet, containerd, runc and CNI plugins, and its images (the pause image, Debian's base): what up --node-runtime=containerd runs.
	@go run ./hack/kubebin -components etcd -node-runtime >/dev/null

.PHONY: paddle-runtime
paddle-runtime: ## Install (once, cached outside the repo) the pinned CPU PaddlePaddle runtimes (2.6.2, 3.0.0, 3.3.1), Python venvs; bin/.paddle-runtime names the default's.
	@mkdir -p $(LOCALBIN)
	@go run ./hack/paddleruntime -all > $(LOCALBIN)/.paddle-runtime

# Three tiers. Unit tests need nothing running. Tests that need a
# kube-apiserver or a sandbox carry the `integration` build tag when they
# live beside unit tests, or live in test/integration, test/webhook and
# test/install. The end-to-end tests run the local cluster with real Paddle.
UNIT_PKGS := ./api/... ./cmd/... ./examples/... ./hack/... ./internal/... ./pkg/...
INTEGRATION_PKGS = $(addprefix ./,$(sort $(dir $(shell grep -rl --include='*_test.go' '^//go:build integration' api cmd hack internal pkg)))) \
	./test/integration/... ./test/webhook/... ./test/install/...
ENVTEST_ENV = KUBEBUILDER_ASSETS="$$(cat $(LOCALBIN)/.envtest-assets)"

.PHONY: test
test: verify-generated verify-web lint check-docs test-unit test-python test-integration test-e2e ## Run every test: unit (Go and Python), integration (real API server) and end to end (local cluster, real Paddle).

.PHONY: check-docs
check-docs: ## Check the Markdown: every relative link resolves, every `make TARGET` named exists.
	go run ./hack/checkdocs .

.PHONY: test-unit
test-unit: ## Unit tests: no API server, no sandbox, no cluster.
	go test -timeout 5m $(GO_TEST_FLAGS) $(UNIT_PKGS)

FUZZTIME ?= 20s
.PHONY: fuzz
fuzz: ## Explore the pod and env generation with random job shapes for FUZZTIME (the seed corpus runs in test-unit already).
	go test ./internal/operator/controller -run '^$$' -fuzz '^FuzzPodsAndEnv$$' -fuzztime $(FUZZTIME) -parallel 2

.PHONY: test-python
test-python: ## Build the Python SDK's wheel, install it into a fresh venv, run mypy and its unit tests.
	hack/test-python.sh unit

.PHONY: test-integration
test-integration: envtest $(HELM) $(KUSTOMIZE) ## Integration tests against a real kube-apiserver and etcd, sandboxes included.
	$(ENVTEST_ENV) go test -tags integration -timeout 20m $(GO_TEST_FLAGS) $(INTEGRATION_PKGS)

.PHONY: test-e2e
# The end-to-end run ends with its slowest tests (bin/e2e-events.json holds
# every test's events), the figures the suite's own speed work starts from,
# then each failure's last lines: the end of the log is what a CI excerpt keeps.
E2E_EVENTS := $(LOCALBIN)/e2e-events.json
E2E_FORMAT = $(if $(findstring -v,$(GO_TEST_FLAGS)),standard-verbose,standard-quiet)
# How many end-to-end tests run at once (those that leave the suite's cluster
# whole): one alone left 45% of two cores idle (a job's pods mostly wait for
# each other). Three were faster (29.8 min against 35.6) but slowed Paddle's
# elastic formation past its progress deadline (docs/benchmarks.md, run 36).
E2E_PARALLEL ?= 2
# A guard against a hung suite, not its budget: CI's machine ran the suite
# 8% slower than this one (docs/benchmarks.md), and .ci/run has 90 minutes.
E2E_TIMEOUT ?= 70m
# Flags for the suite itself, such as -first-run.repeat (make soak).
E2E_ARGS ?=
# The real-kubelet tier, TestContainerdNode (a container-runtime cluster of
# its own, ~8 min of Paddle jobs), runs as a test process of its own from the
# suite's start, beside it: as one of the suite's two parallel slots it could
# start last and finish 15 min after the rest. A run naming its tests
# (GO_TEST_FLAGS=-run=...) runs them in the suite's process alone.
E2E_RUNTIME_NODE ?= $(if $(findstring -run,$(GO_TEST_FLAGS)),,1)
E2E_RUNTIME_NODE_TEST := ^TestContainerdNode$$
E2E_RUNTIME_NODE_EVENTS := $(LOCALBIN)/e2e-runtime-node-events.json
E2E_RUNTIME_NODE_LOG := $(LOCALBIN)/e2e-runtime-node.log

test-e2e: envtest addons node-runtime $(GOTESTSUM) ## End-to-end tests on the local cluster, with real PaddlePaddle and real gang schedulers.
	hack/setup.sh tests
	# Every pinned Paddle runtime first: the node installs a missing one when
	# a pod first needs it, a minute inside some test's timeout.
	$(MAKE) paddle-runtime
	@status=0; skip=; rm -f $(E2E_RUNTIME_NODE_EVENTS); \
	if [ -n "$(E2E_RUNTIME_NODE)" ]; then \
		skip='$(E2E_RUNTIME_NODE_TEST)'; \
		$(ENVTEST_ENV) $(GOTESTSUM) --format $(E2E_FORMAT) --jsonfile $(E2E_RUNTIME_NODE_EVENTS) -- -timeout $(E2E_TIMEOUT) $(GO_TEST_FLAGS) -run '$(E2E_RUNTIME_NODE_TEST)' ./test/e2e/... -args -suite-cluster=false > $(E2E_RUNTIME_NODE_LOG) 2>&1 & tier=$$!; \
	fi; \
	$(ENVTEST_ENV) $(GOTESTSUM) --format $(E2E_FORMAT) --jsonfile $(E2E_EVENTS) -- -timeout $(E2E_TIMEOUT) -parallel $(E2E_PARALLEL) $(GO_TEST_FLAGS) $${skip:+-skip "$$skip"} ./test/e2e/... $(E2E_ARGS) || status=$$?; \
	if [ -n "$(E2E_RUNTIME_NODE)" ]; then \
		wait $$tier || status=$$?; echo "the real-kubelet tier ($(E2E_RUNTIME_NODE_TEST), beside the suite):"; cat $(E2E_RUNTIME_NODE_LOG); \
	fi; \
	echo "slowest end-to-end tests (30 s or more):"; $(GOTESTSUM) tool slowest --jsonfile $(E2E_EVENTS) --threshold 30s; \
	if [ -f $(E2E_RUNTIME_NODE_EVENTS) ]; then $(GOTESTSUM) tool slowest --jsonfile $(E2E_RUNTIME_NODE_EVENTS) --threshold 30s; go run ./hack/testfailures -lines 40 $(E2E_RUNTIME_NODE_EVENTS); fi; \
	go run ./hack/testfailures -lines 40 $(E2E_EVENTS); exit $$status

.PHONY: bench
bench: envtest addons ## Benchmark the operator (pod creation, deadlines, failover), the node (pod start, idle pods, service proxy), the network between nodes, gang scheduling and the examples on the local cluster.
	$(ENVTEST_ENV) go test ./test/integration -run '^$$' -bench 'PodCreation|ActiveDeadline' -benchtime 3x
	go test ./internal/localcluster/serviceproxy -run '^$$' -bench ServiceProxyConnection -benchtime 2000x
	go test -tags integration ./internal/localcluster/podnetwork -run '^$$' -bench PodToPodTCP -benchtime 2s -count 3
	$(ENVTEST_ENV) go test -tags integration ./internal/localcluster/node -run '^$$' -bench 'PodStart|ManyPods' -benchtime 3x
	$(ENVTEST_ENV) go test ./test/e2e -run '^$$' -bench 'Example|CPUThreads|LeaderFailover|GangBinding' -benchtime 1x -timeout 60m

.PHONY: soak
soak: ## Run the first-run tests ten times in a row each: how rare a program that fails its first run is.
	$(MAKE) test-e2e GO_TEST_FLAGS="-count=1 '-run=TestFirstParameterServerProgramRuns|TestElasticJobFormsTheFirstTime'" E2E_ARGS='-args -first-run.repeat=10'

.PHONY: bench-dashboard
bench-dashboard: envtest ## Benchmark the dashboard's jobs page with 1,000 jobs in headless Chromium on the local cluster.
	$(ENVTEST_ENV) go test ./test/e2e -run '^$$' -bench DashboardJobs -benchtime 5x -timeout 30m

BENCH_SCALE_FLAGS ?=
.PHONY: bench-scale
bench-scale: envtest ## Scale benchmark: the operator against direct pod creation, 1-1000 jobs and 10-1000-pod jobs (BENCH_SCALE_FLAGS="--runs 3 --out bench.md").
	$(ENVTEST_ENV) go run ./hack/benchscale $(BENCH_SCALE_FLAGS)

.PHONY: test-install
test-install: envtest $(HELM) $(KUSTOMIZE) ## Check config/ and the Helm chart against the generated manifests, each other and a real API server.
	$(ENVTEST_ENV) go test $(GO_TEST_FLAGS) ./hack/chartgen/... ./test/install/...

.PHONY: tools
tools: $(CONTROLLER_GEN) $(HELM) $(KUSTOMIZE) $(GOTESTSUM) ## Build the pinned tools of hack/tools (controller-gen, helm, kustomize, gotestsum) into bin/.

##@ Build

.PHONY: build
build: ## Build the binaries into bin/: paddlejob, paddlejob-operator, paddlejob-launch (what training images copy) and kubectl-paddlejob, the kubectl plugin.
	go build -o $(LOCALBIN)/ ./cmd/...
	ln -sf paddlejob $(LOCALBIN)/kubectl-paddlejob

# The operator image config/ and the Helm chart deploy.
IMG ?= ghcr.io/paddlejob/paddlejob-operator:latest

.PHONY: docker-build
docker-build: ## Build the operator image from the Dockerfile (IMG=registry/paddlejob-operator:tag); needs a Docker engine.
	@command -v docker >/dev/null 2>&1 || { echo "docker-build: no docker command on this machine: install Docker, or build the Dockerfile where it runs (docker build -t $(IMG) .)"; exit 1; }
	@docker info >/dev/null 2>&1 || { echo "docker-build: docker is installed but no Docker engine answers (docker info): start it, or build the Dockerfile elsewhere (docker build -t $(IMG) .)"; exit 1; }
	docker build -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the operator image IMG (after make docker-build).
	docker push $(IMG)

##@ Local cluster

.PHONY: demo
demo: build ## Start the local cluster, train the PS example with live progress, stop the cluster.
	hack/demo.sh

$(CONTROLLER_GEN): hack/tools/go.mod
	@mkdir -p $(LOCALBIN)
	cd hack/tools && go build -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

$(HELM): hack/tools/go.mod
	@mkdir -p $(LOCALBIN)
	cd hack/tools && go build -o $(HELM) helm.sh/helm/v3/cmd/helm

$(KUSTOMIZE): hack/tools/go.mod
	@mkdir -p $(LOCALBIN)
	cd hack/tools && go build -o $(KUSTOMIZE) sigs.k8s.io/kustomize/kustomize/v5

$(GOTESTSUM): hack/tools/go.mod
	@mkdir -p $(LOCALBIN)
	cd hack/tools && go build -o $(GOTESTSUM) gotest.tools/gotestsum
