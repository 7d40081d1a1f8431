# scaleplane's build. The two commands a newcomer needs are `make demo` and
# `make test`; both build the control-plane programs first when missing.

SHELL := /usr/bin/env bash
GO ?= go
# The product is several Go modules at the packages' paths (docs/design.md,
# "What a library user downloads"): the root module, which a library user
# requires, and the modules that hold the heavy requirements. Each go.mod
# replaces the other scaleplane modules by their folders, so every module
# builds from a clean clone on its own; no go.work is committed, and a
# go.work of yours is ignored here, so that what make tests is what each
# go.mod says (GOWORK=off).
export GOWORK := off
MODULES := . promql controllers/autoscaler externalscaler certs cmd/scaleplane e2e
# MODULES and the modules of the release tooling, the tools and the example
# operator: go vet runs in each (golangci-lint in MODULES).
ALL_MODULES := $(MODULES) hack/tools/controlplane hack/tools/certmanager hack/tools/keda hack/tools/protogen hack/release examples/cachecluster
BIN := bin/controlplane
# Users who already have envtest binaries point KUBEBUILDER_ASSETS at them.
ifdef KUBEBUILDER_ASSETS
CONTROLPLANE :=
else
CONTROLPLANE := $(BIN)/etcd $(BIN)/kube-apiserver $(BIN)/kubectl $(BIN)/kube-controller-manager
endif
CERTMANAGER := $(BIN)/cert-manager
# KEDA and Prometheus are needed only by the e2e packages below; `make test`
# builds them while the other packages' tests run (most of an e2e test is
# waiting, so the compiler gets the idle cores), one after the other so they
# never compile side by side.
PROMETHEUS := $(BIN)/prometheus
KEDA := $(BIN)/keda-operator $(BIN)/keda-adapter $(BIN)/keda-crds
# Packages of module e2e.
PROMETHEUS_PKGS := ./prometheus/...
KEDA_PKGS := ./keda/...
TEST_TIMEOUT ?= 40m
GOLANGCI_VERSION ?= v2.15.0
# The newest controller-tools that builds with our k8s.io v0.37 modules.
CONTROLLER_GEN_VERSION ?= v0.23.0
CONTROLLER_GEN := bin/tools/controller-gen-$(CONTROLLER_GEN_VERSION)
# Release tooling (go-containerregistry, Helm's Go library) is a Go module of
# its own, so its dependencies stay out of the product's go.mod.
# Built with the release binary's flags (CGO_ENABLED=0, -trimpath) so that
# the packages both use are compiled once.
RELEASE := CGO_ENABLED=0 $(GO) -C hack/release run -trimpath .
IMAGE_LAYOUT ?= $(CURDIR)/bin/image
DIST ?= $(CURDIR)/dist
# Where `make push` and the manifests of `make release` point.
IMAGE ?= ghcr.io/scaleplane/scaleplane

.PHONY: all build demo test test-core test-prometheus test-keda test-examples test-release unit e2e lint bench bench-baseline generate verify tools clean help image push release release-verify

all: build

help: ## list targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

tools: $(CONTROLPLANE) $(CERTMANAGER) $(PROMETHEUS) $(KEDA) ## build etcd, kube-apiserver, kube-controller-manager, kubectl, cert-manager, Prometheus and KEDA from Go modules (once)

$(BIN)/%:
	@hack/build-tool.sh $*

# One heavy build at a time: Prometheus, then KEDA's operator, whose
# compiled packages the adapter reuses.
$(BIN)/keda-operator: | $(PROMETHEUS)
$(BIN)/keda-adapter: | $(BIN)/keda-operator

build: ## build bin/scaleplane, and bin/kubectl-scaleplane and bin/kubectl_complete-scaleplane: the same program as the kubectl plugin and its completion (kubectl scaleplane explain)
	$(GO) build -C cmd/scaleplane -o $(CURDIR)/bin/scaleplane .
	ln -f bin/scaleplane bin/kubectl-scaleplane
	ln -f bin/scaleplane bin/kubectl_complete-scaleplane

# Run from the checkout's top folder, where dev writes its kubeconfig.
demo: build $(CONTROLPLANE) ## run scaleplane on an embedded local control plane (Ctrl-C stops and cleans up)
	bin/scaleplane dev

test: $(CONTROLPLANE) $(CERTMANAGER) ## run every test: unit, fuzz seeds, e2e against the real control plane, KEDA and Prometheus, the release tooling's (image, chart, image run as its pod)
	@$(MAKE) --no-print-directory -j3 test-core test-prometheus test-keda test-examples
	@$(MAKE) --no-print-directory test-release

# Every package of every module in MODULES but those needing KEDA or
# Prometheus, one module after the other (go test runs a module's packages
# side by side); every module runs even when one fails.
test-core:
	@failed=; for m in $(MODULES); do \
	  echo "==> go test in module $$m"; \
	  $(GO) -C $$m test -count=1 -timeout $(TEST_TIMEOUT) $$($(GO) -C $$m list ./... | grep -v -e /e2e/keda -e /e2e/prometheus) || failed="$$failed $$m"; \
	done; if [ -n "$$failed" ]; then echo "tests failed in module(s):$$failed"; exit 1; fi

test-prometheus: $(PROMETHEUS)
	$(GO) -C e2e test -count=1 -timeout $(TEST_TIMEOUT) $(PROMETHEUS_PKGS)

test-keda: $(KEDA)
	$(GO) -C e2e test -count=1 -timeout $(TEST_TIMEOUT) $(KEDA_PKGS)

# The example operator, a module of its own, tested as an operator
# author's would be: the control plane from SCALEPLANE_CONTROLPLANE_DIR.
test-examples: $(CONTROLPLANE)
	cd examples/cachecluster && $(if $(KUBEBUILDER_ASSETS),,SCALEPLANE_CONTROLPLANE_DIR=$(CURDIR)/$(BIN)) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

# The release module's tests (image, chart, manifests, the image run as its pod).
test-release:
	$(GO) -C hack/release test -count=1 -timeout $(TEST_TIMEOUT) ./...

unit: ## unit tests only (no control plane)
	$(GO) test -count=1 ./scaling/... ./api/... ./profile/... ./webhooks/... ./controllers/...
	@for m in promql controllers/autoscaler externalscaler certs cmd/scaleplane; do $(GO) -C $$m test -count=1 ./... || exit 1; done

e2e: tools ## e2e tests only
	$(GO) -C e2e test -count=1 -timeout $(TEST_TIMEOUT) ./...

lint: ## gofmt, go vet, and golangci-lint when it installs
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@for m in $(ALL_MODULES); do echo "==> go vet in module $$m"; $(GO) -C $$m vet ./... || exit 1; done
	@if [ ! -x bin/tools/golangci-lint ]; then \
	  echo "==> installing golangci-lint $(GOLANGCI_VERSION) into bin/tools"; \
	  GOBIN=$(CURDIR)/bin/tools $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION) \
	    || echo "golangci-lint did not install; gofmt and go vet passed"; \
	fi
	@if [ -x bin/tools/golangci-lint ]; then for m in $(MODULES); do echo "==> golangci-lint in module $$m"; (cd $$m && $(CURDIR)/bin/tools/golangci-lint run ./...) || exit 1; done; fi

bench: tools ## benchmarks (ns/op, allocs/op, custom figures) compared with hack/bench/baseline.txt, create latency against no-op webhooks, and the 1000-workload controller scale test
	$(BENCH_KEY) | $(GO) run ./hack/benchcmp -baseline hack/bench/baseline.txt
	$(GO) test -run '^$$' -bench . -benchmem ./scaling/... ./profile/... ./webhooks/... ./controllers/...
	$(GO) -C promql test -run '^$$' -bench . -benchmem ./...
	$(GO) -C controllers/autoscaler test -run '^$$' -bench . -benchmem ./...
	$(GO) -C e2e test -count=1 -timeout 20m -run '^$$' -bench CreateLatency -benchtime 300x ./admission/
	SCALEPLANE_SCALE_TEST=1 $(GO) -C e2e test -count=1 -timeout 20m -run 'Scale' -v ./controllers/ | grep -E '^(=== RUN|--- |\s+.*(scale|reconciled|peak|p50|p99))' || true

# The benchmarks hack/bench/baseline.txt holds: `make bench` compares a
# run with it (allocs/op past 3 % fail; time only past 3x, as it depends
# on the machine), and `make bench-baseline` refreshes it.
BENCH_KEY = { $(GO) -C controllers/autoscaler test -run '^$$' -bench 'BenchmarkTick(1000|10000|1000Fair)$$' -benchtime 3x -count 3 -cpu 1 -benchmem . && \
	$(GO) -C controllers/autoscaler test -run '^$$' -bench 'BenchmarkTick100000$$' -benchtime 1x -count 1 -cpu 1 -timeout 20m -benchmem . && \
	$(GO) -C controllers/autoscaler test -run '^$$' -bench 'BenchmarkReconcile(10000|100000)$$' -benchtime 2x -count 1 -cpu 1 -timeout 20m -benchmem . && \
	$(GO) -C promql test -run '^$$' -bench 'Benchmark(Ingest|Query|BytesPerSample)$$' -count 3 -cpu 1 -benchmem . && \
	$(GO) test -run '^$$' -bench 'BenchmarkDecide$$' -count 3 -cpu 1 -benchmem ./scaling/; }

bench-baseline: ## refresh hack/bench/baseline.txt from this machine (say why in the commit)
	{ echo "# make bench-baseline on $$(uname -m), $$(nproc) cores, $$(date -u +%F); $$(git rev-parse --short HEAD)"; $(BENCH_KEY); } > hack/bench/baseline.txt.tmp
	mv hack/bench/baseline.txt.tmp hack/bench/baseline.txt

# KEDA beside scaleplane on the same workloads, then many workloads created
# at once (e2e/sidebyside): heavy, so never part of `make test`, whose run
# of the package only unit-tests its measuring helpers.
.PHONY: bench-keda
SIDE_BY_SIDE_N ?= 1000
SCALE_N ?= 10000
bench-keda: $(CONTROLPLANE) $(PROMETHEUS) $(KEDA) ## scaleplane (embedded store, remote Prometheus) beside KEDA + HPA on SIDE_BY_SIDE_N workloads (1000), then SCALE_N (10000) workloads created at once; tables in bin/bench-*.txt
	SCALEPLANE_SIDE_BY_SIDE=1 SCALEPLANE_SIDE_BY_SIDE_N=$(SIDE_BY_SIDE_N) SCALEPLANE_SCALE_N=$(SCALE_N) \
	SCALEPLANE_SIDE_BY_SIDE_OUT=$(CURDIR)/bin/bench-keda-N$(SIDE_BY_SIDE_N).txt SCALEPLANE_SCALE_OUT=$(CURDIR)/bin/bench-scale-N$(SCALE_N).txt \
	$(GO) -C e2e test -count=1 -timeout 150m -v ./sidebyside/

$(CONTROLLER_GEN):
	@echo "==> installing controller-gen $(CONTROLLER_GEN_VERSION) into bin/tools"
	@rm -rf $@.tmp && GOBIN=$(CURDIR)/$@.tmp $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	@mv $@.tmp/controller-gen $@ && rmdir $@.tmp

generate: $(CONTROLLER_GEN) ## scaling's config types from api/ (hack/configgen), deepcopy and the ScaleProfile CRD from api/ (controller-gen), the Helm chart's copy of the CRD, and the KEDA external scaler's gRPC stubs (externalscaler/pb, without protoc)
	$(GO) run ./hack/configgen -in api/v1alpha1/autoscaling_types.go -out scaling/zz_generated.config.go
	$(CONTROLLER_GEN) object paths=./scaling/...
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	cp config/crd/bases/*.yaml config/helm/scaleplane/files/crds/
	cd examples/cachecluster && $(CURDIR)/$(CONTROLLER_GEN) object paths=./api/... && $(CURDIR)/$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd
	cd hack/tools/protogen && $(GO) run . -out $(CURDIR)/externalscaler/pb \
	  -M 'externalscaler.proto=github.com/scaleplane/scaleplane/externalscaler/pb;pb' $(CURDIR)/externalscaler/pb/externalscaler.proto

verify: generate ## regenerate generated files (deepcopy, CRDs, gRPC stubs, golden files, go.sum) and fail on a diff
	@for m in $(MODULES); do UPDATE_GOLDEN=1 $(GO) -C $$m test -count=1 -run 'Golden' ./... || exit 1; done
	UPDATE_GOLDEN=1 $(GO) -C hack/release test -count=1 -run 'Golden' ./manifests
	@for m in $(MODULES) hack/release examples/cachecluster; do $(GO) -C $$m mod tidy || exit 1; done
	@git diff --exit-code -- . ':(exclude)bin' || { echo "generated files are out of date: commit the diff above"; exit 1; }

image: ## build the OCI image layout bin/image (linux/amd64 + linux/arm64) without a container engine; prints the index digest
	$(RELEASE) image -root $(CURDIR) -out $(IMAGE_LAYOUT)

push: ## push bin/image to IMAGE=registry/repo (tag = version; credentials from your docker config)
	$(RELEASE) push -layout $(IMAGE_LAYOUT) -image $(IMAGE)

release: ## write dist/: install.yaml (image pinned by bin/image's digest), the Helm chart, the SBOM (SPDX) and provenance (in-toto, SLSA); SIGN_KEY=key.pem signs each (<file>.sig)
	$(RELEASE) release -root $(CURDIR) -layout $(IMAGE_LAYOUT) -image $(IMAGE) -dist $(DIST) $(if $(SIGN_KEY),-sign-key $(abspath $(SIGN_KEY)))

release-verify: ## check every dist/*.sig against PUBLIC_KEY (default dist/signing-key.pub; give the key you trust)
	$(RELEASE) verify -key $(abspath $(or $(PUBLIC_KEY),$(DIST)/signing-key.pub)) -dist $(DIST)

clean: ## remove built programs and release output
	rm -rf bin dist
