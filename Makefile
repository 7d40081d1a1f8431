# scaleplane's build. The two commands a newcomer needs are `make demo` and
# `make test`; both build the control-plane programs first when missing.

SHELL := /usr/bin/env bash
GO ?= go
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
PROMETHEUS_PKGS := ./e2e/prometheus/...
KEDA_PKGS := ./e2e/keda/...
TEST_TIMEOUT ?= 40m
GOLANGCI_VERSION ?= v2.15.0

.PHONY: all build demo test test-core test-prometheus test-keda unit e2e lint bench verify generate tools clean help

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

build: ## build bin/scaleplane
	$(GO) build -o bin/scaleplane ./cmd/scaleplane

demo: $(CONTROLPLANE) ## run scaleplane on an embedded local control plane (Ctrl-C stops and cleans up)
	$(GO) run ./cmd/scaleplane dev

test: $(CONTROLPLANE) $(CERTMANAGER) ## run every test: unit, fuzz seeds, e2e against the real control plane, KEDA and Prometheus
	@$(MAKE) --no-print-directory -j3 test-core test-prometheus test-keda

# Every package but those needing KEDA or Prometheus.
test-core:
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v -e /e2e/keda -e /e2e/prometheus)

test-prometheus: $(PROMETHEUS)
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(PROMETHEUS_PKGS)

test-keda: $(KEDA)
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(KEDA_PKGS)

unit: ## unit tests only (no control plane)
	$(GO) test -count=1 ./scaling/... ./config/... ./webhooks/... ./controllers/... ./promql/... ./certs/... ./externalscaler/... ./cmd/...

e2e: tools ## e2e tests only
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./e2e/...

lint: ## gofmt, go vet, and golangci-lint when it installs
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@for m in hack/tools/controlplane hack/tools/certmanager hack/tools/keda hack/tools/protogen; do (cd $$m && $(GO) vet ./...) || exit 1; done
	@if [ ! -x bin/tools/golangci-lint ]; then \
	  echo "==> installing golangci-lint $(GOLANGCI_VERSION) into bin/tools"; \
	  GOBIN=$(CURDIR)/bin/tools $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION) \
	    || echo "golangci-lint did not install; gofmt and go vet passed"; \
	fi
	@if [ -x bin/tools/golangci-lint ]; then bin/tools/golangci-lint run ./...; fi

bench: tools ## benchmarks (ns/op, allocs/op, custom figures) and the 1000-workload controller scale test
	$(GO) test -run '^$$' -bench . -benchmem ./scaling/... ./config/... ./webhooks/... ./promql/... ./controllers/...
	SCALEPLANE_SCALE_TEST=1 $(GO) test -count=1 -timeout 20m -run 'Scale' -v ./e2e/controllers/ | grep -E '^(=== RUN|--- |\s+.*(scale|reconciled|peak|p50|p99))' || true

generate: ## regenerate the KEDA external scaler's gRPC stubs (externalscaler/pb) from its .proto, without protoc
	cd hack/tools/protogen && $(GO) run . -out $(CURDIR)/externalscaler/pb \
	  -M 'externalscaler.proto=github.com/scaleplane/scaleplane/externalscaler/pb;pb' $(CURDIR)/externalscaler/pb/externalscaler.proto

verify: generate ## regenerate generated files (golden files, gRPC stubs, go.sum) and fail on a diff
	UPDATE_GOLDEN=1 $(GO) test -count=1 -run 'Golden' ./...
	$(GO) mod tidy
	@git diff --exit-code -- . ':(exclude)bin' || { echo "generated files are out of date: commit the diff above"; exit 1; }

clean: ## remove built programs
	rm -rf bin
