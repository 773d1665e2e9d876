package db

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/jmoiron/sqlx"
)

// ReplayTables are the projections the backfill engine's events rebuild.
var ReplayTables = []string{
	"backfills", "backfill_segments", "backfill_ranges", "backfill_key_blocks", "backfill_failures",
	"runs", "attempts", "conflicts", "partition_status", "partition_rollup", "partition_instances", "instance_ranges", "status_ranges",
}

// Rebuild creates a fresh database at path, copies the assets table (synced
// from the workspace, not event-sourced) and applies every backfill-engine
// event of s in order. The caller closes the returned store.
func (s *Store) Rebuild(ctx context.Context, path string) (*Store, error) {
	dst, err := Open(path)
	if err != nil {
		return nil, err
	}
	var assets []AssetRow
	if err := s.r.SelectContext(ctx, &assets, `SELECT * FROM assets ORDER BY id`); err != nil {
		dst.Close()
		return nil, err
	}
	err = dst.Tx(ctx, func(tx *sqlx.Tx) error {
		for _, a := range assets {
			if _, err := tx.NamedExecContext(ctx, `INSERT INTO assets (id, key, grp, description, scheme_kind, scheme_description, scheme_signature, code_version,
				definition, definition_version, last_materialized_at, last_attempt_at, last_attempt_status, removed, created_at, updated_at) VALUES (:id, :key, :grp, :description, :scheme_kind,
				:scheme_description, :scheme_signature, :code_version, :definition, :definition_version, :last_materialized_at, :last_attempt_at, :last_attempt_status,
				:removed, :created_at, :updated_at)`, a); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		dst.Close()
		return nil, err
	}
	var last int64
	for {
		var evs []Event
		if err := s.r.SelectContext(ctx, &evs, `SELECT * FROM events WHERE id > ? AND type IN (?,?,?,?,?,?) ORDER BY id LIMIT 500`, last,
			EvBackfillCreated, EvBackfillState, EvRunsPlanned, EvAttemptsStarted, EvAttemptsFinished, EvConflict); err != nil {
			dst.Close()
			return nil, err
		}
		if len(evs) == 0 {
			return dst, nil
		}
		err := dst.Tx(ctx, func(tx *sqlx.Tx) error {
			for _, e := range evs {
				if err := ApplyEvent(ctx, tx, e.Type, []byte(e.Payload)); err != nil {
					return fmt.Errorf("replay event %d (%s): %w", e.ID, e.Type, err)
				}
			}
			return nil
		})
		if err != nil {
			dst.Close()
			return nil, err
		}
		last = evs[len(evs)-1].ID
	}
}

// CompareProjections compares the replayed tables of two stores and returns
// a description of each difference (empty: identical). Columns listed in
// ignore ("table.column") are left out.
func CompareProjections(ctx context.Context, a, b *Store, ignore ...string) ([]string, error) {
	var diffs []string
	for _, t := range ReplayTables {
		ra, err := tableRows(ctx, a, t, ignore)
		if err != nil {
			return nil, err
		}
		rb, err := tableRows(ctx, b, t, ignore)
		if err != nil {
			return nil, err
		}
		if len(ra) != len(rb) {
			diffs = append(diffs, fmt.Sprintf("%s: %d rows live, %d replayed", t, len(ra), len(rb)))
		}
		for i := 0; i < min(len(ra), len(rb)); i++ {
			if ra[i] != rb[i] {
				diffs = append(diffs, fmt.Sprintf("%s row %d:\n  live     %s\n  replayed %s", t, i, ra[i], rb[i]))
				break
			}
		}
	}
	return diffs, nil
}

func tableRows(ctx context.Context, s *Store, table string, ignore []string) ([]string, error) {
	rows, err := s.r.QueryxContext(ctx, `SELECT * FROM `+table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		m := map[string]any{}
		if err := rows.MapScan(m); err != nil {
			return nil, err
		}
		for k, v := range m {
			if b, ok := v.([]byte); ok {
				m[k] = string(b)
			}
			for _, ig := range ignore {
				if ig == table+"."+k {
					delete(m, k)
				}
			}
		}
		b, _ := json.Marshal(m) // map keys are sorted
		out = append(out, string(b))
	}
	sortStrings(out)
	return out, rows.Err()
}

func sortStrings(s []string) { slices.Sort(s) }
