# seedinit — see README.md. `make help` lists the targets.

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
GO      ?= go
BIN     := bin/seedinit
export CGO_ENABLED := 0

.PHONY: help build test deps test-go e2e e2e-arm64 crash lint demo clean fuzz bench bench-cloudinit uroot fleet serve-db bench-serve release deb check-release

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z0-9-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build the static binary bin/seedinit (flags and why: scripts/build-seedinit)
	GO=$(GO) scripts/build-seedinit $(BIN) $(VERSION)

uroot: ## seedinit in u-root v0.16.0 images, as /init and as uinit, with the kernel's modules (.cache/uroot; scripts/build-uroot)
	GO=$(GO) scripts/build-uroot

test: deps lint test-go check-release e2e crash ## install what the tests need (as root), then run every test; tests that cannot run say why

deps: ## install the Debian packages, kernel and EC2 mock the tests use (root; idempotent)
	@scripts/install-deps || echo "deps: not all test dependencies could be installed; their tests will skip"
	@scripts/fetch-kernel >/dev/null || echo "deps: no Debian kernel; the QEMU tests will skip"
	@scripts/fetch-kernel arm64 >/dev/null || echo "deps: no Debian arm64 kernel; the arm64 boot will skip"
	@scripts/ec2-mock >/dev/null || echo "deps: no EC2 metadata mock; its tests will skip"

test-go: ## go test ./..., confined so that a test writing outside its temporary directory fails, every skip listed (scripts/test-go)
	GO=$(GO) scripts/test-go

e2e: ## boot Debian's kernel in QEMU with seedinit's initramfs, in u-root's images, and on arm64; check each scenario
	scripts/e2e
	GO=$(GO) scripts/e2e-uroot
	GO=$(GO) scripts/e2e-arm64

release: ## dist/: static binaries for every Linux GOARCH that builds, SHA256SUMS (signed with SIGN_KEY=KEY), the module list (scripts/release)
	GO=$(GO) scripts/release

deb: ## dist/seedinit_VERSION_ARCH.deb with dpkg-deb, no network (GOARCH=arm64 ... for another; scripts/build-deb)
	GO=$(GO) scripts/build-deb

check-release: ## two builds give the same bytes, the .deb is reproducible and lintian-clean, a signed SHA256SUMS verifies (scripts/check-release)
	GO=$(GO) scripts/check-release

crash: ## cut the power (SIGKILL of QEMU, disk cache=none) 25 times in a first boot, boot again, check accounts, homes, keys, files, partition, e2fsck (CRASH_SEED, CRASH_CUTS replay; scripts/crash)
	scripts/crash

e2e-arm64: ## boot Debian's arm64 kernel in qemu-system-aarch64 with seedinit's arm64 initramfs (NoCloud)
	scripts/e2e-arm64

lint: ## gofmt, go vet (amd64, arm64 and 32-bit 386), staticcheck when it can be installed, and the repository's shape: imports run down, docs linked (internal/repocheck)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	GOARCH=arm64 $(GO) vet ./...
	GOARCH=386 $(GO) vet ./...
	@if scripts/staticcheck -version >/dev/null 2>&1; then scripts/staticcheck ./...; \
	  else echo "lint: staticcheck not available, skipped"; fi
	$(GO) test -count=1 ./internal/repocheck

demo: build ## apply the bundled appliance seed to a fresh root, then boot it as a Debian appliance in QEMU and log in over SSH; as root it first installs what the boot needs (packages, kernel, a cached Debian root), without root it says what it skipped
	GO=$(GO) scripts/demo

bench-cloudinit: ## seedinit beside cloud-init on the same seed: time, peak RSS and private memory, resulting roots, net-convert (root; caches a Debian root in .cache)
	scripts/bench-cloudinit

bench: ## boot QEMU 5 times per scenario (default host keys and 2 vCPUs too) beside a busybox baseline; steps, slowest modules, the targets line
	scripts/bench

fleet: ## (root) 100 instances in network namespaces and 8 QEMU guests provisioned at once by dnsmasq and seedinit serve; p50/p95/max, requests, collisions (FLEET_NS, FLEET_VMS; scripts/fleet)
	scripts/fleet

serve-db: ## a throwaway PostgreSQL for seedinit serve --db (in .cache/serve-db, 127.0.0.1:55432, trust; Ctrl-C stops it; scripts/serve-db)
	scripts/serve-db

bench-serve: ## (root) 10,000 simulated instances against seedinit serve: the embedded store, then two replicas on PostgreSQL with one killed halfway; p50/p99, req/s, seeds lost (scripts/bench-serve)
	GO=$(GO) scripts/bench-serve

fuzz: ## run each fuzz target (or those FUZZ names) for FUZZTIME (default 10s)
	scripts/fuzz $${FUZZTIME:-10s} $(FUZZ)

clean: ## remove build output
	rm -rf bin dist
