package handlers

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/catalog"
)

// APIAddPartitionKeys adds keys to a dynamic-partitioned asset's set:
// POST /api/v1/assets/{key}/partition-keys {"keys": ["partner-a", ...]}.
func (h *Handler) APIAddPartitionKeys(c echo.Context) error {
	ctx := c.Request().Context()
	a, err := h.routeAsset(c)
	if err != nil {
		return err
	}
	ds, ok := a.Def.Scheme.(catalog.DynamicScheme)
	if !ok {
		return BadRequest("keys", "asset %s has %s partitions; only dynamic partitions take new keys", a.Def.Key, a.Def.Scheme.Kind())
	}
	var body struct {
		Keys []string `json:"keys"`
	}
	if err := decodeStrict(c, &body, false); err != nil {
		if ue, ok := err.(*UserError); ok {
			ue.Message += `; send {"keys": ["key-a", "key-b"]}`
		}
		return err
	}
	if len(body.Keys) == 0 || len(body.Keys) > MaxReportItems {
		return BadRequest("keys", "send between 1 and %d keys", MaxReportItems)
	}
	for i, k := range body.Keys {
		if err := ds.ValidateKey(k); err != nil {
			return BadRequest(fmt.Sprintf("keys[%d]", i), "keys[%d]: %s", i, err.Error())
		}
	}
	added, err := h.Store.AddDynamicKeys(ctx, ds.Set(), body.Keys, Actor(c), h.Now())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"set": ds.Set(), "added": added})
}
