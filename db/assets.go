package db

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/tessera-dev/tessera/catalog"
)

// AssetRow is an asset as synced into the store.
type AssetRow struct {
	ID                 int64  `db:"id"`
	Key                string `db:"key"`
	Group              string `db:"grp"`
	Description        string `db:"description"`
	SchemeKind         string `db:"scheme_kind"`
	SchemeDescription  string `db:"scheme_description"`
	SchemeSignature    string `db:"scheme_signature"`
	CodeVersion        string `db:"code_version"`
	Definition         string `db:"definition"`
	DefinitionVersion  int64  `db:"definition_version"`
	LastMaterializedAt *int64 `db:"last_materialized_at"`
	// LastAttemptAt and LastAttemptStatus are the asset's most recent
	// partition attempt (a failure wins a tie).
	LastAttemptAt     *int64  `db:"last_attempt_at"`
	LastAttemptStatus *string `db:"last_attempt_status"`
	Removed           bool    `db:"removed"`
	CreatedAt         int64   `db:"created_at"`
	UpdatedAt         int64   `db:"updated_at"`
}

type assetDefinition struct {
	Key         string   `json:"key"`
	Group       string   `json:"group,omitempty"`
	Description string   `json:"description,omitempty"`
	Partitions  string   `json:"partitions"`
	Deps        []string `json:"deps,omitempty"`
	CodeVersion string   `json:"code_version,omitempty"`
	Pool        string   `json:"pool,omitempty"`
	Executor    string   `json:"executor"`
	Freshness   string   `json:"freshness,omitempty"`
	Timeout     string   `json:"timeout,omitempty"`
	MaxAttempts int      `json:"max_attempts,omitempty"`
}

// SchemeSignature identifies a partition scheme's key space: when it changes,
// stored partition indexes are recomputed.
func SchemeSignature(s catalog.Scheme) string {
	sig := string(s.Kind()) + "|" + s.Describe()
	if ts, ok := s.(catalog.TimeScheme); ok {
		sig += "|" + ts.KeyFormat() + "|" + ts.WindowStart(0).UTC().Format(time.RFC3339)
	}
	if ms, ok := s.(catalog.MultiScheme); ok {
		for _, d := range ms.Dimensions() {
			sig += "|" + d.Name + "=" + SchemeSignature(d.Scheme)
		}
	}
	h := sha256.Sum256([]byte(sig))
	return hex.EncodeToString(h[:8])
}

func definitionOf(a *catalog.Asset) assetDefinition {
	d := assetDefinition{
		Key: a.Key, Group: a.Group, Description: a.Description, Partitions: a.Scheme.Describe(),
		CodeVersion: a.CodeVersion, Pool: a.Pool, Executor: a.Executor.Kind, MaxAttempts: a.Retries.MaxAttempts,
	}
	for _, dep := range a.Deps {
		d.Deps = append(d.Deps, dep.Asset+" ("+string(dep.Mapping)+")")
	}
	if f := a.Freshness; f != nil {
		// Both parts and the deadline's timezone: a change to any of them
		// is a new definition version.
		var parts []string
		if f.MaxLag > 0 {
			parts = append(parts, "max lag "+f.MaxLag.String())
		}
		if f.DeadlineHHMM != "" {
			parts = append(parts, f.DeadlineLabel())
		}
		d.Freshness = strings.Join(parts, ", ")
	}
	if a.Timeout > 0 {
		d.Timeout = a.Timeout.String()
	}
	return d
}

// SyncWorkspace brings the assets table in line with the workspace: new assets
// are inserted, changed definitions bump definition_version, assets no longer
// declared are marked removed (their history stays). When an asset's partition
// scheme changed, its stored partition indexes are recomputed. One event per
// changed asset, in the same transaction.
func (s *Store) SyncWorkspace(ctx context.Context, ws *catalog.Workspace, actor string, now time.Time) error {
	dyn, err := s.LoadDynamicKeys(ctx)
	if err != nil {
		return err
	}
	return s.Tx(ctx, func(tx *sqlx.Tx) error {
		// Instances started together on one PostgreSQL database sync one
		// at a time (the steps' lock): each reads the assets the one
		// before it inserted, instead of inserting them again (a
		// duplicate key on assets.key).
		if err := LockSteps(ctx, tx); err != nil {
			return err
		}
		var existing []AssetRow
		if err := tx.SelectContext(ctx, &existing, `SELECT * FROM assets`); err != nil {
			return err
		}
		byKey := map[string]AssetRow{}
		for _, r := range existing {
			byKey[r.Key] = r
		}
		seen := map[string]bool{}
		for _, a := range ws.Assets {
			seen[a.Key] = true
			def := definitionOf(a)
			b, _ := json.Marshal(def)
			sig := SchemeSignature(a.Scheme)
			old, ok := byKey[a.Key]
			switch {
			case !ok:
				_, err := tx.ExecContext(ctx, `INSERT INTO assets (key, grp, description, scheme_kind, scheme_description, scheme_signature, code_version, definition, definition_version, created_at, updated_at)
					VALUES (?,?,?,?,?,?,?,?,1,?,?)`, a.Key, a.Group, a.Description, string(a.Scheme.Kind()), a.Scheme.Describe(), sig, a.CodeVersion, string(b), Millis(now), Millis(now))
				if err != nil {
					return err
				}
				if _, err := AppendEvent(ctx, tx, "asset.added", "asset:"+a.Key, actor, def, "", now); err != nil {
					return err
				}
			case old.Definition != string(b) || old.Removed || old.SchemeSignature != sig:
				_, err := tx.ExecContext(ctx, `UPDATE assets SET grp=?, description=?, scheme_kind=?, scheme_description=?, scheme_signature=?, code_version=?, definition=?,
					definition_version=definition_version+1, removed=0, updated_at=? WHERE id=?`,
					a.Group, a.Description, string(a.Scheme.Kind()), a.Scheme.Describe(), sig, a.CodeVersion, string(b), Millis(now), old.ID)
				if err != nil {
					return err
				}
				if old.SchemeSignature != sig {
					if err := reindexAsset(ctx, tx, old.ID, a.Scheme.Space(now, dyn)); err != nil {
						return err
					}
				}
				if _, err := AppendEvent(ctx, tx, "asset.changed", "asset:"+a.Key, actor, map[string]any{"definition": def, "definition_version": old.DefinitionVersion + 1}, "", now); err != nil {
					return err
				}
			}
		}
		for _, r := range existing {
			if !seen[r.Key] && !r.Removed {
				if _, err := tx.ExecContext(ctx, `UPDATE assets SET removed=1, updated_at=? WHERE id=?`, Millis(now), r.ID); err != nil {
					return err
				}
				if _, err := AppendEvent(ctx, tx, "asset.removed", "asset:"+r.Key, actor, map[string]any{}, "", now); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// reindexAsset recomputes every stored partition index of an asset against its
// new key space; keys that left the space get idx -1 (kept as history, not shown
// in grids), and the rollup is rebuilt. Running attempts' leases become rows
// first (reindexLeases). The asset's instance ranges, which name partitions
// by index, become rows before (expandInstanceRanges), and its running
// attempts, which know their partitions by their former indexes, will
// record theirs as rows. Status ranges become rows before all that
// (explodeAllStatusRanges).
func reindexAsset(ctx context.Context, tx *sqlx.Tx, assetID int64, sp catalog.Space) error {
	// Status ranges name partitions by index too: rows first (their
	// instances become instance ranges, expanded next).
	if err := explodeAllStatusRanges(ctx, tx, assetID); err != nil {
		return err
	}
	if err := expandInstanceRanges(ctx, tx, assetID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE attempts SET reindexed=1 WHERE state='running' AND asset_id=?`, assetID); err != nil {
		return err
	}
	var keys []string
	if err := tx.SelectContext(ctx, &keys, `SELECT partition_key FROM partition_status WHERE asset_id=?`, assetID); err != nil {
		return err
	}
	for _, k := range keys {
		i, err := sp.Index(k)
		if err != nil {
			i = -1
		}
		if _, err := tx.ExecContext(ctx, `UPDATE partition_status SET idx=? WHERE asset_id=? AND partition_key=?`, i, assetID, k); err != nil {
			return err
		}
	}
	// The leases' rows first, so that the blocks they land in are marked
	// too.
	if err := reindexLeases(ctx, tx, assetID, sp); err != nil {
		return err
	}
	if err := markAssetStaleBlocks(ctx, tx, assetID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM partition_rollup WHERE asset_id=?`, assetID); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO partition_rollup (asset_id, block, status, n)
		SELECT asset_id, idx >> ?, status, COUNT(*) FROM partition_status WHERE asset_id=? AND idx >= 0 GROUP BY 1, 2, 3`,
		RollupShift, assetID)
	return err
}

// Assets lists the assets that the current workspace declares.
func (s *Store) Assets(ctx context.Context) ([]AssetRow, error) {
	return selectAll[AssetRow](ctx, s.r, `SELECT * FROM assets WHERE removed=0 ORDER BY key`)
}

// AssetByKey returns one asset, or ErrNotFound.
func (s *Store) AssetByKey(ctx context.Context, key string) (AssetRow, error) {
	return getOne[AssetRow](ctx, s.r, "asset", key, `SELECT * FROM assets WHERE key=? AND removed=0`, key)
}

// AssetIDs maps asset keys to ids for the declared assets.
func (s *Store) AssetIDs(ctx context.Context) (map[string]int64, error) {
	rows, err := s.Assets(ctx)
	if err != nil {
		return nil, err
	}
	m := make(map[string]int64, len(rows))
	for _, r := range rows {
		m[r.Key] = r.ID
	}
	return m, nil
}
