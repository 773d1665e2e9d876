package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// AssetJSON is an asset in API answers.
type AssetJSON struct {
	Key              string           `json:"key"`
	Group            string           `json:"group"`
	Description      string           `json:"description,omitempty"`
	Partitions       string           `json:"partitions"`
	PartitionKind    string           `json:"partition_kind"`
	CodeVersion      string           `json:"code_version"`
	Pool             string           `json:"pool,omitempty"`
	Executor         string           `json:"executor"`
	Deps             []string         `json:"deps"`
	TotalPartitions  int64            `json:"total_partitions"`
	Counts           map[string]int64 `json:"counts"`
	LastMaterialized *string          `json:"last_materialized_at"`
}

// APIAssets lists every asset with its partition counts.
func (h *Handler) APIAssets(c echo.Context) error {
	ctx := c.Request().Context()
	assets, err := h.assetHealthsNow(ctx)
	if err != nil {
		return err
	}
	out := make([]AssetJSON, 0, len(assets))
	for _, a := range assets {
		j := AssetJSON{Key: a.Def.Key, Group: a.Def.Group, Description: a.Def.Description, Partitions: a.Def.Scheme.Describe(),
			PartitionKind: string(a.Def.Scheme.Kind()), CodeVersion: a.Def.CodeVersion, Pool: a.Def.Pool, Executor: a.Def.Executor.Kind,
			Deps: []string{}, TotalPartitions: a.Space.Len(), Counts: map[string]int64{}}
		for _, d := range a.Def.Deps {
			j.Deps = append(j.Deps, d.Asset)
		}
		j.Counts = healthJSON(a.health)
		if a.lastMat != nil {
			s := db.FromMillis(*a.lastMat).Format(timeFormat)
			j.LastMaterialized = &s
		}
		out = append(out, j)
	}
	return c.JSON(http.StatusOK, map[string]any{"assets": out})
}

const timeFormat = catalog.APITimeLayout

// healthJSON is an asset's counts in API answers (catalog.Health):
// fresh, stale, failed, in_progress and missing add up to its partitions;
// materialized is fresh + stale (the partitions with data), and
// last_attempt_failed counts those of them whose last attempt failed.
func healthJSON(c catalog.HealthCounts) map[string]int64 {
	out := map[string]int64{db.StatusMaterialized: c.Materialized(), "last_attempt_failed": c.LastAttemptFailed}
	for _, h := range catalog.Healths {
		out[string(h)] = c.Of(h)
	}
	return out
}
