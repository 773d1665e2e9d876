package db

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"
)

// Watermark is the live pipeline's ceiling for an asset.
type Watermark struct {
	AssetID   int64  `db:"asset_id" json:"-"`
	Partition string `db:"partition_key" json:"partition"`
	Idx       int64  `db:"idx" json:"-"`
	SetAt     int64  `db:"set_at" json:"set_at"`
	Actor     string `db:"actor" json:"actor"`
}

// SetWatermark records the last partition the live pipeline has processed.
func (s *Store) SetWatermark(ctx context.Context, assetID int64, assetKey, key string, idx int64, actor string, now time.Time) error {
	return s.Tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO watermarks (asset_id, partition_key, idx, set_at, actor) VALUES (?,?,?,?,?)
			ON CONFLICT (asset_id) DO UPDATE SET partition_key=excluded.partition_key, idx=excluded.idx, set_at=excluded.set_at, actor=excluded.actor`,
			assetID, key, idx, Millis(now), actor); err != nil {
			return err
		}
		_, err := AppendEvent(ctx, tx, "asset.watermark", "asset:"+assetKey, actor, map[string]any{"partition": key}, "", now)
		return err
	})
}

// GetWatermark returns the asset's watermark, or ErrNotFound.
func (s *Store) GetWatermark(ctx context.Context, assetID int64) (Watermark, error) {
	var w Watermark
	err := s.r.GetContext(ctx, &w, `SELECT * FROM watermarks WHERE asset_id=?`, assetID)
	if errors.Is(err, sql.ErrNoRows) {
		return w, ErrNotFound
	}
	return w, err
}
