# convstream — common tasks. `make run` starts a worker with an embedded NATS
# server; `make test` runs every test (CI calls it through .ci/run).

GO        ?= go
PKGS      ?= ./...
BENCHTIME ?= 1s
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all build run test test-short bench lint fmt vet staticcheck fuzz clean

all: build

build:
	$(GO) build ./...

run:
	$(GO) run ./cmd/worker

test:
	$(GO) vet $(PKGS)
	$(GO) test -count=1 -timeout 20m $(PKGS)
	@# go test hides the output of passing packages; show the conformance summaries.
	@$(GO) test -count=1 -v -run 'TestConformance' ./conversation/ ./processors/ | grep -E 'conformance.*passed'

test-short:
	$(GO) test -short -count=1 $(PKGS)

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./conversation/ ./enginecore/ ./processors/

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./conversation/

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
