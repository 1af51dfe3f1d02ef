# nrikit developer targets. `make test` is the full test suite that CI runs.

GO        ?= go
BIN       := $(CURDIR)/.bin
TOOLS_MOD := -modfile=$(CURDIR)/tools/go.mod
TOOLS     := $(BIN)/buf $(BIN)/protoc-gen-go $(BIN)/protoc-gen-go-ttrpc $(BIN)/staticcheck

.PHONY: test-js js-deps all build test check-tidy test-unit test-nowasm test-interop test-e2e test-e2e-crio test-cluster fuzz lint generate check-generated tools bench clean images pin-images test-images test-manifests

all: build

## Prerequisites: each target checks what it needs before it starts, so that a missing prerequisite fails at
## once, naming it and how to get it (tools/require.sh: go, node, root, and the packages the end-to-end suites
## install with apt-get), not minutes into a build. Targets whose own prerequisites would run first list their
## require-* first; the others get them here.
REQUIRE_GO := build check-format check-tidy vet test-unit test-nowasm test-interop fuzz tools bench bench-interop \
	bench-compare images pin-images test-images test-manifests check-platforms test-compat helm
$(REQUIRE_GO): require-go
js-deps: require-node
test-cluster: require-go require-root require-cluster
REQUIRES := require-go require-node require-root require-e2e require-crio require-cluster
.PHONY: $(REQUIRES)
$(REQUIRES): require-%:
	@MAKE_TARGET='$(or $(MAKECMDGOALS),all)' sh $(CURDIR)/tools/require.sh $*

build:
	$(GO) build ./...

## test: everything CI checks: formatting, vet, lint, generated code, race tests, fuzz smoke, interop,
## and the end-to-end suite against a real containerd and a real CRI-O (needs root: CI runs as root).
test: require-go require-node require-root require-e2e require-crio require-cluster check-format check-tidy vet lint check-generated test-unit test-nowasm test-js fuzz test-interop test-images test-manifests check-platforms test-compat test-e2e test-e2e-crio test-cluster

check-format:
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## check-tidy: go.mod and go.sum of the main module, of e2e/, of the test modules and of interop/legacyplugin
## (both of its go.mod files, NRI v0.11.0 and v0.10.0) are what `go mod tidy` makes them.
check-tidy:
	$(GO) mod tidy -diff
	cd e2e && $(GO) mod tidy -diff
	@set -e; for m in $(TEST_MODULES); do echo "cd $$m && go mod tidy -diff"; (cd $$m && $(GO) mod tidy -diff); done
	cd interop/legacyplugin && $(GO) mod tidy -diff && $(GO) mod tidy -diff -modfile=go.v0.10.0.mod

# TEST_MODULES are modules of tests that need requirements nrikit's go.mod must not carry: a runtime or
# plugin that adopts nrikit inherits that go.mod's requirements (tests/tracing: OpenTelemetry's SDK).
TEST_MODULES := tests/tracing

vet:
	$(GO) vet ./...
	@set -e; for m in $(TEST_MODULES); do echo "cd $$m && go vet ./..."; (cd $$m && $(GO) vet ./...); done

## test-unit: the Go tests of the main module, without npm: the tests that run the JavaScript plugin are
## left to test-js.
JS_GO_TESTS := ^(TestServeJavaScriptPlugin|TestJSPlugin[A-Za-z]*)$$
# UNIT_TIMEOUT bounds each package's tests: go test's default, 10 minutes, is met by adaptation's tests
# under -race on a heavily loaded machine (the tests' own bounds stretch with the load, see testscale).
UNIT_TIMEOUT ?= 30m
test-unit:
	$(GO) test -race -count=1 -timeout=$(UNIT_TIMEOUT) -skip '$(JS_GO_TESTS)' ./...
	@set -e; for m in $(TEST_MODULES); do echo "cd $$m && go test -race ./..."; (cd $$m && $(GO) test -race -count=1 -timeout=$(UNIT_TIMEOUT) ./...); done
	cd tools && $(GO) test -count=1 ./protoc-gen-nrifields ./protoc-gen-nrievents ./internal/...

## test-nowasm: the WASM host and the runtime library built without WASM support (tag nri_no_wasm):
## WASM plugins are refused with the reason.
test-nowasm:
	$(GO) test -tags nri_no_wasm -count=1 -run 'WASM|Disabled' ./internal/wasmhost ./adaptation ./conformance/...

## test-js: the JavaScript plugin's own unit tests (node's test runner), then the Go tests that run it
## (required to run: NRIKIT_REQUIRE_JS makes them fail instead of skip if node or its packages are missing).
test-js: require-node js-deps
	cd plugins/js-env && node --test test/
	NRIKIT_REQUIRE_JS=1 $(GO) test -race -count=1 -timeout=$(UNIT_TIMEOUT) -run '$(JS_GO_TESTS)' ./cmd/nri ./conformance

## js-deps: install the JavaScript plugin's pinned npm dependencies (package-lock.json).
js-deps:
	npm ci --prefix plugins/js-env --no-audit --no-fund

## test-e2e: the end-to-end suite against a real containerd v2.4.2 (e2e/, a separate module; needs root,
## unshare and ip; see docs/containerd.md). The first run builds containerd, ctr, its runc shim and crictl from
## the Go module proxy into ~/.cache/nrikit/e2e (the user cache directory, kept across runs and clones) and installs runc with apt-get if missing. It runs twice:
## on containerd as released (upstream's NRI), then on containerd built with compat/nri (nrikit's runtime library
## inside, NRIKIT_E2E_RUNTIME=nrikit), where the nrikit-only scenarios (e2e/nrikit_test.go) run too.
E2E_TIMEOUT ?= 30m
test-e2e: require-go require-root require-e2e js-deps
	cd e2e && $(GO) vet ./... && GO=$(GO) $(GO) test -count=1 -v -timeout=$(E2E_TIMEOUT) .
	cd e2e && GO=$(GO) NRIKIT_E2E_RUNTIME=nrikit $(GO) test -count=1 -v -timeout=$(E2E_TIMEOUT) .

## test-cluster: a real single-node Kubernetes (e2e/cluster, see deploy/README.md, Tested on; needs root): kine,
## kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kubectl v1.37.2 built by the module
## e2e/kubebuild from the Go module proxy into the user cache directory (~/.cache/nrikit, kept; cold ~1,800
## CPU-seconds with kine), containerd v2.4.2 on nrikit (the e2e suite's build), all in a network and mount namespace of their
## own, under the shipped node policy (deploy/policy/policy.yaml). The gpu-env DaemonSet is applied with kubectl
## apply -k, rolled, edited, scraped, widened beyond its grant (refused) and deleted, then installed and uninstalled
## with Helm's Go library (deploy/helm/nrikit-plugin), and deploy/README.md's helm lines are run with the helm
## command (built from e2e/go.mod's helm.sh/helm/v3 into ~/.cache/nrikit/helm-VERSION). Warm: ~2.5 min.
CLUSTER_TIMEOUT ?= 60m
test-cluster:
	cd e2e && $(GO) vet ./cluster && GO=$(GO) $(GO) test -count=1 -v -timeout=$(CLUSTER_TIMEOUT) ./cluster

## helm: build the helm command that e2e/go.mod pins (helm.sh/helm/v3, the version the cluster test runs) into
## ~/.cache/nrikit/helm-VERSION, unless it is there, and print its path: the route to the helm of
## deploy/README.md's Helm section. The first build takes minutes (7 on 2 busy cores) and about 1 GB.
.PHONY: helm
helm:
	@cd e2e && GO=$(GO) GOWORK=off $(GO) run ./cmd/ensure-helm

## test-e2e-crio: the same suite against a real CRI-O v1.36.3 (NRIKIT_E2E_CRI=crio; see docs/crio.md), twice: on
## CRI-O as released (upstream's NRI v0.11.0), then on CRI-O built with compat/criobuild (nrikit's runtime library
## inside). Both runs also run CRI-O's own NRI suite, test/nri (TestCrioNRISuite). The first run builds CRI-O, its
## copyimg, pinns and test/nri into ~/.cache/nrikit/e2e/crio-v1.36.3 (kept; ~12 min cold on 2 cores) and installs conmon, runc,
## libseccomp-dev, busybox-static and containernetworking-plugins with apt-get if missing; the build on nrikit is
## brought up to date in ~/.cache/nrikit/e2e/crio-v1.36.3-nrikit at every run.
test-e2e-crio: require-go require-root require-crio js-deps
	cd e2e && $(GO) vet ./... && GO=$(GO) NRIKIT_E2E_CRI=crio $(GO) test -count=1 -v -timeout=$(E2E_TIMEOUT) .
	cd e2e && GO=$(GO) NRIKIT_E2E_CRI=crio NRIKIT_E2E_RUNTIME=nrikit $(GO) test -count=1 -v -timeout=$(E2E_TIMEOUT) .

# The interop module links upstream's api package and ours, which register the
# same protobuf names; neither resolves messages through the global registry,
# so the duplicate registration is made harmless rather than fatal.
INTEROP_LDFLAGS := -ldflags=-X=google.golang.org/protobuf/reflect/protoregistry.conflictPolicy=ignore
test-interop:
	cd interop && $(GO) vet $(INTEROP_LDFLAGS) ./... && $(GO) test -race -count=1 -timeout=$(UNIT_TIMEOUT) $(INTEROP_LDFLAGS) ./...

## fuzz: run every fuzz target briefly (FUZZTIME executions per target).
# Count-based, not a duration: duration-based -fuzztime hits a race in Go 1.26's fuzz
# coordinator (golang/go#75804) that reports "context deadline exceeded" with no crasher.
FUZZTIME ?= 50000x
fuzz:
	@set -e; for spec in $$(grep -rl --include='*_test.go' '^func Fuzz' . | grep -v '^./interop/' | xargs -n1 dirname | sort -u); do \
	  for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$spec/*_test.go | sed 's/^func //'); do \
	    echo "fuzz $$spec $$f"; $(GO) test -run='^$$' -fuzz="^$$f\$$" -fuzztime=$(FUZZTIME) $$spec; \
	  done; \
	done

## images: an OCI image tarball per Go plugin under plugins/ (the sample plugins and the template) in
## .images/NAME.tar, each loadable with `ctr images import`: a static binary on an empty base, user 65532,
## reproducible (deploy/images, a separate module; see deploy/images/README.md).
## VERSION is the images' version label and tag; SOURCE_DATE_EPOCH their creation time (default the epoch).
VERSION    ?= $(shell git describe --always 2>/dev/null || echo dev)
IMAGE_REPO ?= localhost/nrikit
images:
	cd deploy/images && GOWORK=off $(GO) run . -root $(CURDIR) -out $(CURDIR)/.images -version '$(VERSION)' -repo '$(IMAGE_REPO)' -go '$(GO)'

## pin-images: write the name and digest of each image in .images (make images) into its release overlay,
## deploy/kustomize/release/NAME, which then deploys the image by digest (see deploy/README.md, Releases).
pin-images:
	cd deploy/manifests && GOWORK=off $(GO) run ./cmd/pin-images -images $(CURDIR)/.images -release $(CURDIR)/deploy/kustomize/release

## test-images: deploy/images is tidy and vetted, and two plugin images build twice to the same digests.
## Vetted and tested static and -trimpath, like the plugins, so that both share compiled packages (cold: ~1.5 min).
test-images:
	cd deploy/images && $(GO) mod tidy -diff && CGO_ENABLED=0 $(GO) vet -trimpath ./... && CGO_ENABLED=0 $(GO) test -trimpath -count=1 ./...

## check-platforms: the main module and the compatibility module compat/nri (see docs/embedding.md) build for
## windows and darwin, as containerd builds its NRI code there; compat/nri's packages that upstream's builds for
## wasip1 (a WASM plugin's) build there too; compat/nri is tidy and vetted on linux.
COMPAT_WASIP1_PKGS := . ./pkg/api ./pkg/log ./pkg/net ./pkg/plugin ./pkg/version ./pkg/runtime-tools/generate ./pkg/adaptation/builtin ./plugins/default-validator/... ./types/v1
.PHONY: check-platforms
check-platforms:
	@set -e; for os in windows darwin; do \
	  echo "GOOS=$$os go build ./... (main module, compat/nri)"; \
	  GOOS=$$os $(GO) build ./...; \
	  (cd compat/nri && GOOS=$$os GOWORK=off $(GO) build ./...); \
	done
	cd compat/nri && GOOS=wasip1 GOARCH=wasm GOWORK=off $(GO) build $(COMPAT_WASIP1_PKGS)
	cd compat/nri && GOWORK=off $(GO) mod tidy -diff && GOWORK=off $(GO) vet ./...

## test-compat: compat/nri's own tests, and containerd v2.4.2 built on it (compat/containerdbuild, see
## docs/embedding.md): containerd's unit tests of its NRI code run against nrikit, and containerd builds for
## windows and darwin; CRI-O v1.36.3's NRI code, its server (which converts updates with ToOCI) and its NRI suite
## compile on it (compat/criobuild; without the seccomp tag, which needs libseccomp-dev). The end-to-end suites run the linux
## builds (test-e2e, test-e2e-crio).
CONTAINERD_NRI_TESTS := github.com/containerd/containerd/v2/internal/nri/... github.com/containerd/containerd/v2/internal/cri/nri/...
CRIO_NRI_PKGS := github.com/cri-o/cri-o/internal/nri/... github.com/cri-o/cri-o/internal/config/nri github.com/cri-o/cri-o/server github.com/cri-o/cri-o/test/nri
CRIO_TAGS_NO_SECCOMP := containers_image_openpgp containers_image_ostree_stub exclude_graphdriver_btrfs btrfs_noversion
# containerd for windows and darwin is built and linked through the go command's cache of executables: `go run
# -exec true` links it into that cache (keyed by every input of the link) and hands it to true instead of running
# it, so that it is linked again only when something it is built from changed (go build -o /dev/null linked both
# at every run).
.PHONY: test-compat
test-compat:
	cd compat/nri && GOWORK=off $(GO) test -race -count=1 ./...
	cd compat/containerdbuild && GOWORK=off $(GO) mod tidy -diff && GOWORK=off $(GO) test -race -count=1 $(CONTAINERD_NRI_TESTS)
	@set -e; cd compat/containerdbuild; for os in windows darwin; do \
	  echo "GOOS=$$os go build containerd (on compat/nri)"; \
	  GOOS=$$os GOWORK=off $(GO) run -exec true github.com/containerd/containerd/v2/cmd/containerd; \
	done
	cd compat/criobuild && GOWORK=off $(GO) mod tidy -diff && GOWORK=off $(GO) build -tags '$(CRIO_TAGS_NO_SECCOMP)' $(CRIO_NRI_PKGS)

## test-manifests: deploy/manifests (a separate module: kustomize and k8s.io/api) is tidy and vetted, renders
## every overlay of deploy/kustomize into strictly decoded DaemonSets with the promised properties, starts
## every plugin with its DaemonSet's arguments, and plays attacks on the shipped plugin configurations in the
## simulator (see deploy/README.md).
test-manifests:
	cd deploy/manifests && GOWORK=off $(GO) mod tidy -diff && GOWORK=off $(GO) vet ./... && GOWORK=off $(GO) test -count=1 ./...

lint: require-go $(BIN)/staticcheck
	$(BIN)/staticcheck ./...
	@set -e; for m in $(TEST_MODULES); do echo "cd $$m && staticcheck ./..."; (cd $$m && $(BIN)/staticcheck ./...); done

tools: $(TOOLS)

# A tool of tools/go.mod, copied from the go command's cache of executables: `go tool -n NAME` builds it if
# needed and prints where it is, keyed by the go command itself (the tool's version and dependencies, the go
# version), so that a fresh clone copies the tools instead of linking them again.
$(BIN)/%: tools/go.mod tools/go.sum
	@mkdir -p $(BIN)
	exe=$$($(GO) tool $(TOOLS_MOD) -n $*) && cp "$$exe" $@.tmp && mv $@.tmp $@

# The generators of the field and event tables are part of this repository (tools/protoc-gen-nri*).
NRI_GENERATORS := protoc-gen-nrifields protoc-gen-nrievents
$(NRI_GENERATORS:%=$(BIN)/%): $(BIN)/%: tools/go.mod tools/go.sum $(wildcard tools/protoc-gen-nri*/*.go tools/internal/*/*.go)
	@mkdir -p $(BIN)
	cd tools && $(GO) build -trimpath -o $@ ./$*

## generate: regenerate protobuf and ttrpc code and the field and event tables (api/, merge/ and
## ocispec/fields_generated.go, api/events_generated.go, and the per-event glue in internal/wasmabi,
## internal/wasmhost, stub/wasmguest and the simulator; docs/internals.md, "Adding a field" and "Adding an
## event") from proto/. The ttrpc services get the constraint
## !wasip1 (protoc-gen-go-ttrpc has no option for it): a WASM plugin guest (stub/wasmguest) never speaks
## ttrpc, and without the constraint every guest links ttrpc, grpc's status and logrus.
generate: require-go $(BIN)/buf $(BIN)/protoc-gen-go $(BIN)/protoc-gen-go-ttrpc $(NRI_GENERATORS:%=$(BIN)/%)
	$(BIN)/buf generate
	{ printf '//go:build !wasip1\n\n'; cat api/nri_ttrpc.pb.go; } > api/nri_ttrpc.pb.go.tmp
	mv api/nri_ttrpc.pb.go.tmp api/nri_ttrpc.pb.go
	cd compat/nri && GOWORK=off $(GO) generate ./pkg/api ./pkg/adaptation

## check-generated: fail if committed generated code differs from a fresh generation.
COMPAT_GENERATED := 'compat/nri/pkg/api/aliases*.go' 'compat/nri/pkg/adaptation/api_aliases*.go'
NRI_GENERATED := 'merge/*_generated.go' 'ocispec/*_generated.go' 'internal/wasmabi/*_generated.go' 'internal/wasmhost/*_generated.go' 'stub/wasmguest/*_generated.go' 'cmd/nri/internal/simulator/*_generated.go'

check-generated: generate
	@git diff --exit-code -- api/ record/recordpb/ $(NRI_GENERATED) $(COMPAT_GENERATED) || (echo "generated code is stale: run 'make generate' and commit"; exit 1)
	@test -z "$$(git ls-files --others --exclude-standard api/ record/recordpb/ $(NRI_GENERATED) $(COMPAT_GENERATED))" || (echo "untracked generated files in api/, record/recordpb/, merge/, ocispec/, internal/wasm*, stub/wasmguest, the simulator or compat/nri"; exit 1)

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./...

## bench-interop: the performance harness of issue 9: every scenario against the
## bare ttrpc floor and against upstream, plugins as processes, in ROUNDS rounds
## (upstream, nrikit, upstream, nrikit, ...); prints the table of docs/benchmarks.md
## (medians of the rounds, their range). Slow, so not part of `make test`.
BENCHTIME ?= 1s
ROUNDS ?= 3
BENCH ?= ^BenchmarkNRI$$
.PHONY: bench-interop bench-compare
bench-interop:
	cd interop && BENCH_ROUNDS=$(ROUNDS) $(GO) test $(INTEROP_LDFLAGS) -run='^$$' -bench='$(BENCH)' -benchmem -benchtime=$(BENCHTIME) -timeout=90m ./bench/

## bench-compare: bench-interop on the commits BASE and HEAD (git worktrees in a temporary
## directory), RUNS runs of each, alternating; prints nrikit's figures before and after per row.
RUNS ?= 3
bench-compare:
	@test -n "$(BASE)" || { echo "usage: make bench-compare BASE=<rev> [RUNS=3] [BENCH=pattern] [BENCHTIME=1s]"; exit 2; }
	cd interop && $(GO) run ./bench/cmd/benchcompare -base '$(BASE)' -head HEAD -runs $(RUNS) -rounds 1 \
		-bench '$(BENCH)' -benchtime $(BENCHTIME)

clean:
	rm -rf $(BIN)

## upstream-descriptor: rebuild api/testdata/upstream-v0.12.5.binpb, the compiled schema of
## containerd/nri v0.12.5 (from the Go module cache) that api's wire-identity test compares against.
UPSTREAM_NRI := github.com/containerd/nri@v0.12.5
upstream-descriptor: require-go $(BIN)/buf
	@set -e; dir=$$($(GO) mod download -json $(UPSTREAM_NRI) | sed -n 's/.*"Dir": "\(.*\)".*/\1/p'); \
	tmp=$$(mktemp -d); mkdir -p $$tmp/pkg/api; cp $$dir/pkg/api/api.proto $$tmp/pkg/api/; \
	printf 'version: v2\n' > $$tmp/buf.yaml; \
	(cd $$tmp && $(BIN)/buf build --exclude-source-info -o $(CURDIR)/api/testdata/upstream-v0.12.5.binpb); rm -rf $$tmp
