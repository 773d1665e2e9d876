# Tessera: `make run` starts the dashboard on the embedded demo workspace,
# `make test` runs every check. Nothing needs installing beyond Go, gcc and npm:
# templ and staticcheck are pinned tool dependencies in go.mod.
GO      ?= go
BIN     := bin/tessera
ADDR    ?= 127.0.0.1:8080
DB      ?= data/tessera.db
VENDOR  := static/vendor/htmx.min.js static/vendor/sse.min.js
TEMPL   := $(wildcard views/*.templ)

.PHONY: run build test test-all test-bin test-race static generate check-generated lint clean

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
# Packages at once in the plain pass (go test -p; its default is the
# number of cores, 2).
TEST_P ?= 2
# web, cli and e2e run the real binary: built once here for the three
# (testkit.PrebuiltBinary reads TESSERA_TEST_BIN) instead of once by each
# package's tests (e2e: once per test). Without the variable, as with
# `go test ./cli` alone, each package builds its own.
TEST_BIN := bin/tessera-test
# -timeout: a package's tests end within it or fail with every goroutine's
# stack (a hang). web takes about 4 minutes in make test here; 15, because CI
# machines have run make test at half this one's speed.
TEST_TIMEOUT ?= 15m
test-all: test-bin
	TESSERA_TEST_BIN=$(CURDIR)/$(TEST_BIN) $(GO) test -count=1 -p $(TEST_P) -parallel $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT) ./web ./cli ./handlers ./db ./jobs ./e2e ./...

# Always run: go build relinks only when something changed.
test-bin:
	$(GO) build -o $(TEST_BIN) .

# The race pass runs once more, under -race, the tests where goroutines
# share state: there the race detector can find what the plain pass
# cannot. A test that renders pages, answers requests one at a time or
# refuses bad input on one goroutine gives it nothing to find (HTTP
# requests made one after another are ordered by their connection), and
# costs 5 to 10 times its plain time under -race: such tests run in the
# plain pass only (test-all runs every test). The lists below name what is
# in (handlers, db) or out (jobs, where nearly every test runs the engine);
# a new handlers or db test where goroutines share state is added to its
# group here. scripts/race_names_exist.sh fails the pass when a name no
# longer names a test (renamed or deleted). -short also skips the few tests that only parse or render
# large inputs (testkit.SkipInRacePass).
empty :=
space := $(empty) $(empty)
# names-regex makes '^(A|B|...)$$' of a list of test names (or patterns).
names-regex = ^($(subst $(space),|,$(strip $(1))))$$

# handlers, in: live streams (the stream goroutine, the broker and the
# engine that publishes to it share the subscribers and the stream's
# credential and slots).
RACE_HANDLERS := TestStream.* TestRunPageTailsTheLiveLog
# ... requests at once, and the memos that concurrent requests share.
RACE_HANDLERS += TestLaunchIsIdempotent TestRecentMemoShares TestEventTextsReadEachPayloadOnce
# ... backfills that the running engine (its controller goroutine and its
# attempts) plans, runs, retries and cancels while the test's requests
# create, act on and read them.
RACE_HANDLERS += TestBackfillAPILifecycle TestCanceledBackfillCountsNothingPending TestBackfillEventsSaySummaries
RACE_HANDLERS += TestBackfillMetrics TestRetryFailedAPIValidatesAndCountsAddUp TestBackfillSaysWhatItsNextChunkWaitsFor
RACE_HANDLERS += TestBackfillAPICreatedHasLocation TestAPITimesHaveOneShape TestIdempotencyKeyReusedSaysHowToFix
RACE_HANDLERS += TestListCursorsAreOpaque TestAsyncRunCompletesThroughTheCallbackRoute TestLeaseWithoutRowShowsInProgress
RACE_HANDLERS += TestRetryFailedFromTwoTabsLaunchesOneChild TestChunkTableExplainsInterruptedAttempts
RACE_HANDLERS += TestQueuedChunksSayWhyTheyWait TestBackfillOutcomeGridPerPartition TestBackfillCountsQueuedRetryOnce
RACE_HANDLERS += TestBackfillPageETAWaitingForRetry TestBackfillPageQueuedIsNotRunning TestCanceledBackfillPageSaysCanceled
RACE_HANDLERS += TestQueuedChunkLooksQueued TestRunPageAndRetryFailed TestRunPageShowsEachAttemptsLog
RACE_HANDLERS += TestRunPartitionsSayWhyTheyFailed TestBackfillListBarShowsFewFailures TestFailedBackfillRecoveredByRetry
RACE_HANDLERS += TestBackfillEventsAndConflictsPages TestChunkKeysSayWhenNotContiguous TestCrashRecoveryDegradedIsReported
# ... a store that cannot write, or is gone, under the running engine (the
# store's probe goroutine, the engine and the requests share its health).
RACE_HANDLERS += TestStoreThatCannotWriteSaysSo TestEngineWaitsOutAStoreThatCannotWrite TestStoreUnavailableAnswers503
# ... schedules and sensors that launch (evaluate, trigger, push), pause or
# move their cursor while the engine runs what they launched.
RACE_HANDLERS += TestScheduleAPITrigger TestScheduleAPITicksPages TestScheduleTickCursorIsStable TestScheduleAPIActionBodies
RACE_HANDLERS += TestScheduleAPIPauseResume TestScheduleButtons TestSchedulePage TestAutomationPage
RACE_HANDLERS += TestSchedulePrunedTicksShown TestScheduleTimesInReadersZone
RACE_HANDLERS += TestSensorAPIPush TestSensorAPIEvaluate TestSensorAPIEvaluateFailure TestSensorAPIEvaluateAnswersItsID
RACE_HANDLERS += TestSensorAPICursor TestSensorPageDryRunAndEvaluate TestSensorsPage TestSensorsPageUsedRunKeySummary
RACE_HANDLERS += TestSensorPrunedHistoryShown TestAutomationPageListsSensors
# ... instances: readiness while PostgreSQL stops, workspaces that differ
# between instances, and reloads under a running engine.
RACE_HANDLERS += TestReadyzWhenPostgresIsDown TestReadyzSaysWorkspaceDiffers TestReloadOfDifferingWorkspaceDoesNotSync
RACE_HANDLERS += TestWorkspaceReloadAPI
# handlers, out (the other ~140): pages, forms, previews and API answers of
# a server whose engine does not run (pgEnv(t, false), testkit.New alone)
# or has nothing to do, one request after another; refusals of bad input,
# which never reach the engine (TestSelector*, TestSensorAPIPushBadInput,
# TestSensorPageRefusals, ...); sign-ins and password changes, whose
# argon2 hashing is the slowest thing under -race (TestChangeOwnPassword
# 34 s) and runs on the request's goroutine; pure functions.

# db, in: concurrent writers and readers, the step lock and heartbeats
# across stores, instances starting at once, login reservations and
# session keys recorded at once, concurrent staleness patches, the writer's
# urgent waiters, and write faults (the store's probe goroutine).
# Out: migrations, the move between backends, the source checks (SQL in
# db, layering), one-goroutine reads and writes of each table.
RACE_DB := TestConcurrentWritersAndReaders TestLockStepsSerializesAcrossStores TestHeartbeatNotBehindAWaitingStep
RACE_DB += TestInstancesStartingAtOnceMigrateOnce TestInstancesStartingAtOnceCreateOneFirstAdmin
RACE_DB += TestReserveLoginIsAtomic TestRecordSessionKeys TestStaleFactsConcurrentPatchesMatchReload
RACE_DB += TestWaitUrgent TestWriteFaultsAreClassified

# jobs: every test runs the engine (controller, attempts, executors,
# scheduler, sensors, clusters of instances) except these, out: previews
# and selector resolution, refusals of bad input, and pure functions,
# which never start the controller.
RACE_JOBS_OUT := TestSelectorResolutionAndPreview TestExplicitPreviewCountsEveryKey TestPreviewEstimateFromHistoryAndCaps
RACE_JOBS_OUT += TestPreviewAtTheTick TestBadInputWritesNothing TestPushEventBadInput TestDedupKeysKeepsFirstAppearances
RACE_JOBS_OUT += TestRequestHashIsTheHashOfItsJSON TestRetryTitle TestWorkspaceFingerprintCoversAutomation
RACE_JOBS_OUT += TestPoolHoldingReason TestThrottleCountsFromTheLaunch

# handlers and db beside jobs. (-p 1, handlers then db, compiled one
# package at a time: handlers' race binary started 3 minutes in on a busy
# machine.)
RACE_FLAGS = -race -short -count=1 -parallel $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT)
test-race:
	@scripts/race_names_exist.sh handlers $(foreach n,$(RACE_HANDLERS),'$(n)')
	@scripts/race_names_exist.sh db $(foreach n,$(RACE_DB),'$(n)')
	@scripts/race_names_exist.sh jobs $(foreach n,$(RACE_JOBS_OUT),'$(n)')
	$(GO) test $(RACE_FLAGS) -run '$(call names-regex,$(RACE_HANDLERS) $(RACE_DB))' ./handlers ./db & other=$$!; \
	$(GO) test $(RACE_FLAGS) -skip '$(call names-regex,$(RACE_JOBS_OUT))' ./jobs; status=$$?; \
	wait $$other && exit $$status

clean:
	rm -rf bin static/vendor
