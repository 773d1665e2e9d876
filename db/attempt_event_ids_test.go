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
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
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
		read := func(q string) map[string]string {
			got := map[string]string{}
			rows, err := f.store.RawReader().QueryContext(ctx, q, id)
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
			return got
		}
		// Started: each partition, as readers see it, is in progress under the
		// lease of its instance.
		got := map[string]string{}
		rows, err := f.store.StatusRange(ctx, id, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Status == db.StatusInProgress && r.LeaseInstanceID != nil {
				got[r.Key] = *r.LeaseInstanceID
			}
		}
		want := map[string]string{k3: "pi_legacy", k4: db.AttemptInstanceIDs("run_new", 2, "t.hourly")(k4)}
		if len(got) != 2 || got[k3] != want[k3] || got[k4] != want[k4] {
			t.Fatalf("leases %v, want %v", got, want)
		}
		// Finished: the instances are recorded under the same ids.
		finished := []string{
			fmt.Sprintf(`{"attempts":[{"run_id":"run_old","backfill_id":"bf","attempt":1,"asset_id":%d,"state":"succeeded","run_state":"queued","code_version":"v","started":5,"parts":[{"k":%q,"i":3,"id":"pi_legacy","s":"materialized"}]}],"at":7}`, id, k3),
			fmt.Sprintf(`{"attempts":[{"run_id":"run_new","backfill_id":"bf","attempt":2,"asset_id":%d,"asset":"t.hourly","state":"succeeded","run_state":"queued","code_version":"v","started":6,"parts":[{"k":%q,"i":4,"s":"materialized"}]}],"at":8}`, id, k4),
		}
		for _, ev := range finished {
			if err := f.store.Tx(ctx, func(tx *sqlx.Tx) error { return db.ApplyEvent(ctx, tx, db.EvAttemptsFinished, []byte(ev)) }); err != nil {
				t.Fatal(err)
			}
		}
		got = read(`SELECT partition_key, id FROM partition_instances WHERE asset_id=? AND status='materialized'`)
		if len(got) != 2 || got[k3] != want[k3] || got[k4] != want[k4] {
			t.Fatalf("instances %v, want %v", got, want)
		}
		got = read(`SELECT partition_key, last_mat_instance_id FROM partition_status WHERE asset_id=? AND status='materialized' AND lease_instance_id IS NULL AND lease_run_id IS NULL`)
		if len(got) != 2 || got[k3] != want[k3] || got[k4] != want[k4] {
			t.Fatalf("status rows %v, want materialized by %v with their lease cleared", got, want)
		}
		if want[k4] != db.InstanceID("run_new#2", "t.hourly", k4) {
			t.Fatalf("a later attempt's instances belong to run#n: %s", want[k4])
		}
	})
}
