package handlers_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit"
)

// dryRunEstimates are the estimates in words of the previews of the
// requests of each evaluation in a sensor's evaluations list (the history
// API), newest first.
func dryRunEstimates(t *testing.T, env *testkit.Env, tok, sensor string) [][]string {
	t.Helper()
	code, list := apiCall(t, env, tok, "GET", "/api/v1/sensors/"+sensor+"/evaluations", "")
	if code != 200 {
		t.Fatalf("evaluations of %s: %d %v", sensor, code, list)
	}
	var out [][]string
	for _, e := range list["evaluations"].([]any) {
		var ests []string
		for _, r := range e.(map[string]any)["requests"].([]any) {
			pv, _ := r.(map[string]any)["preview"].(map[string]any)
			if _, leaked := pv["estimate_basis"]; leaked {
				t.Errorf("evaluation %v shows the stored estimate_basis: %v", e.(map[string]any)["id"], pv)
			}
			ests = append(ests, fmt.Sprint(pv["estimate"]))
		}
		out = append(out, ests)
	}
	return out
}

// TestSensorDryRunEstimateReadBack: a dry run's previews read back from
// the evaluation history (the evaluations API, and the evaluation the
// evaluate answer shows as recorded) with the estimate in the live
// answer's words, counts with thousands separators; they read back with
// an empty estimate, the store keeping no words and no basis.
func TestSensorDryRunEstimateReadBack(t *testing.T) {
	t.Parallel()
	start := time.Now().UTC().Truncate(time.Hour).Add(-8_000 * time.Hour)
	key := func(h int) string { return start.Add(time.Duration(h) * time.Hour).Format("2006-01-02-15:04") }
	eval := testkit.Script(t, "big.sh", fmt.Sprintf(`echo '{"run_requests": [{"start": %q, "end": %q}]}'`+"\n", key(5_000), key(6_999)))
	ws := testkit.Assets(testkit.Asset("big.hourly", fmt.Sprintf("{hourly: {start: %q}}", key(0)), "executor: {demo: {duration: 1ms}}")) + fmt.Sprintf(`
sensors:
  big:
    assets: [big.hourly]
    evaluator: {command: [%q]}
    interval: 1h
    timeout: 10s
    chunk_size: 1000
`, eval)
	env, tok := operatorEnv(t, ws)
	env.StartSensors(t)
	// One run of 5,000 partitions: the history the estimate rests on.
	b := pgCreateBF(t, env.Handler.Engine, "big.hourly", key(0), key(4_999), 5_000)
	pgWaitState(t, env, b.ID, db.BackfillSucceeded)

	code, dry := apiCall(t, env, tok, "POST", "/api/v1/sensors/big/evaluate", `{"dry_run": true}`)
	reqs, _ := dry["requests"].([]any)
	if code != 200 || len(reqs) != 1 || reqs[0].(map[string]any)["preview"] == nil {
		t.Fatalf("dry run: %d %v, want one request with a preview", code, dry)
	}
	live := fmt.Sprint(reqs[0].(map[string]any)["preview"].(map[string]any)["estimate"])
	if !strings.Contains(live, "big.hourly had about 5,000 partitions a run, these have 1,000:") {
		t.Fatalf("live estimate %q, want the run sizes with separators", live)
	}
	recorded := dry["evaluation"].(map[string]any)["requests"].([]any)
	if got := fmt.Sprint(recorded[0].(map[string]any)["preview"].(map[string]any)["estimate"]); got != live {
		t.Errorf("the evaluate answer's recorded evaluation says %q, its live request %q", got, live)
	}
	if got := dryRunEstimates(t, env, tok, "big"); len(got) != 1 || len(got[0]) != 1 || got[0][0] != live {
		t.Errorf("evaluations API estimates %q, want [[%q]] as the live answer", got, live)
	}
}

// TestSensorOldDryRunKeepsItsWords: a dry run recorded before evaluations
// kept the estimate's basis (its preview has the estimate in words, no
// basis) reads back with its words.
func TestSensorOldDryRunKeepsItsWords(t *testing.T) {
	t.Parallel()
	env, _, tok := sensorEnv(t)
	const words = "big.hourly had about 5000 partitions a run: 2 h 0 min from recent runs of these assets at this concurrency"
	old := fmt.Sprintf(`[{"partitions":["eu"],"run_key":"k1","preview":{"total_partitions":1,"total_chunks":1,"total_runs":1,"estimated_seconds":7200,"estimate":%q}}]`, words)
	if _, err := env.Store.RecordDryRun(t.Context(), db.SensorEvaluation{Sensor: "counter", Kind: db.EvalDryRun, StartedAt: db.Millis(time.Now()),
		Requests: old, Actor: "tester"}); err != nil {
		t.Fatal(err)
	}
	if got := dryRunEstimates(t, env, tok, "counter"); len(got) != 1 || len(got[0]) != 1 || got[0][0] != words {
		t.Errorf("old dry run's estimates %q, want its stored words [[%q]]", got, words)
	}
}
