# Tessera: `make run` starts the dashboard on the embedded demo workspace,
# `make test` runs every check. Nothing needs installing beyond Go, gcc and npm:
# templ and staticcheck are pinned tool dependencies in go.mod.
GO      ?= go
BIN     := bin/tessera
ADDR    ?= 127.0.0.1:8080
DB      ?= data/tessera.db
VENDOR  := static/vendor/htmx.min.js static/vendor/sse.min.js
TEMPL   := $(wildcard views/*.templ)

.PHONY: run build test test-all test-race static generate check-generated lint clean

# Human-readable logs for the demo: the first start prints the admin password
# and the login URL once ("created first admin account").
run: build
	TESSERA_LOG_FORMAT=$${TESSERA_LOG_FORMAT:-text} ./$(BIN) serve --addr $(ADDR) --db $(DB)

build: $(VENDOR) generate
	$(GO) build -o $(BIN) .

# Front-end packages come from the npm registry, pinned by package-lock.json.
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

$(VENDOR): node_modules/.package-lock.json
	mkdir -p static/vendor
	cp node_modules/htmx.org/dist/htmx.min.js static/vendor/htmx.min.js
	cp node_modules/htmx-ext-sse/dist/sse.min.js static/vendor/sse.min.js

static: $(VENDOR)

generate:
	$(GO) tool templ generate -log-level error

# Regenerate with the pinned templ and fail if any generated file changed.
check-generated:
	@before=$$(cat views/*_templ.go | sha256sum); \
	$(GO) tool templ generate -log-level error; \
	after=$$(cat views/*_templ.go | sha256sum); \
	if [ "$$before" != "$$after" ]; then echo "templ generate changed views/*_templ.go: commit the regenerated files"; exit 1; fi

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '_templ.go$$')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

test: $(VENDOR) check-generated
	@$(MAKE) --no-print-directory -j3 lint test-all test-race

# Every package's tests. The runs go side by side (make -j3, lint beside
# them): each leaves the other core idle part of the time (compiling,
# waiting on browsers and servers), and together they take the two cores.
# The longest packages are named first so that they start first (go test
# runs at most two packages at once, in the order given) instead of ending
# the run alone. (Three at once, -p 3, took as long: 6m29s against 6m31s.)
# Within a package, -parallel 4 runs up to four of its parallel tests at
# once instead of GOMAXPROCS (2): most of them wait (on a browser, a
# server, an engine tick) far more than they compute, and two at a time
# left the cores half idle (make test used 1.1 of its 2 cores). Eight at
# once overloaded the machine: servers took over 15 s to start.
TEST_PARALLEL ?= 4
test-all:
	$(GO) test -count=1 -parallel $(TEST_PARALLEL) -timeout 10m ./web ./cli ./handlers ./db ./jobs ./e2e ./...

# The packages where goroutines share state (store, engine, handlers and
# their streams) once more under the race detector. -short: the few tests
# that only parse or render large inputs on one goroutine
# (testkit.SkipInRacePass) run in the plain pass only.
test-race:
	$(GO) test -race -short -count=1 -parallel $(TEST_PARALLEL) -timeout 10m ./handlers ./jobs ./db

clean:
	rm -rf bin static/vendor
