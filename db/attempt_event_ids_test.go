package db_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/tessera-dev/tessera/db"
)

// Attempt events written before they named their asset carry an instance id
// per partition; newer ones leave it to be derived. Both apply.
func TestAttemptEventsWithAndWithoutInstanceIDs(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	id := f.ids["t.hourly"]
	k3, k4 := f.sp.Key(3), f.sp.Key(4)
	events := []string{
		fmt.Sprintf(`{"owner":"w","attempts":[{"run_id":"run_old","backfill_id":"bf","attempt":1,"asset_id":%d,"code_version":"v","parts":[{"k":%q,"i":3,"id":"pi_legacy"}]}],"at":5}`, id, k3),
		fmt.Sprintf(`{"owner":"w","attempts":[{"run_id":"run_new","backfill_id":"bf","attempt":2,"asset_id":%d,"asset":"t.hourly","code_version":"v","parts":[{"k":%q,"i":4}]}],"at":6}`, id, k4),
	}
	for _, ev := range events {
		if err := f.store.Tx(ctx, func(tx *sqlx.Tx) error { return db.ApplyEvent(ctx, tx, db.EvAttemptsStarted, []byte(ev)) }); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]string{}
	rows, err := f.store.R.QueryContext(ctx, `SELECT partition_key, id FROM partition_instances WHERE asset_id=?`, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, i string
		if err := rows.Scan(&k, &i); err != nil {
			t.Fatal(err)
		}
		got[k] = i
	}
	want := map[string]string{k3: "pi_legacy", k4: db.AttemptInstanceIDs("run_new", 2, "t.hourly")(k4)}
	if len(got) != 2 || got[k3] != want[k3] || got[k4] != want[k4] {
		t.Fatalf("instances %v, want %v", got, want)
	}
	if want[k4] != db.InstanceID("run_new#2", "t.hourly", k4) {
		t.Fatalf("a later attempt's instances belong to run#n: %s", want[k4])
	}
}
