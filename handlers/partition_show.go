package handlers

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

// PartitionShow renders one partition: current status, last materialization
// versus last attempt, and every instance, newest first.
func (h *Handler) PartitionShow(c echo.Context) error {
	ctx := c.Request().Context()
	loc := zoneOf(ctx)
	a, err := h.routeAsset(c)
	if err != nil {
		return err
	}
	key := pathParam(c, "partition")
	if _, err := a.Space.Index(key); err != nil {
		return NotFound("%s", err.Error())
	}
	v := views.PartitionPage{AssetKey: a.Def.Key, AssetHref: AssetHref(a.Def.Key), Key: key, Status: db.StatusMissing, Href: PartitionHref(a.Def.Key, key)}
	st, err := h.Store.Partition(ctx, a.ID, key)
	switch {
	case errors.Is(err, db.ErrNotFound):
	case err != nil:
		return err
	default:
		v.Status, v.Materialized = st.Status, st.Materialized
		if st.Materialized && st.LastMatAt != nil {
			v.LastMaterialization = []views.KV{
				{K: "At", V: fmtStamp(loc, st.LastMatAt)},
				{K: "Run", V: deref(st.LastMatRunID)},
				{K: "Code version", V: deref(st.LastMatCodeVersion)},
				{K: "Instance", V: deref(st.LastMatInstanceID)},
			}
			if m := deref(st.LastMatMetadata); m != "" {
				v.LastMaterialization = append(v.LastMaterialization, views.KV{K: "Metadata", V: m})
			}
		}
		if st.LastAttemptAt != nil {
			v.LastAttempt = []views.KV{
				{K: "At", V: fmtStamp(loc, st.LastAttemptAt)},
				{K: "Outcome", V: views.StatusLabel(deref(st.LastAttemptStatus))},
				{K: "Run", V: deref(st.LastAttemptRunID)},
				{K: "Instance", V: deref(st.LastAttemptInstanceID)},
			}
			if e := deref(st.LastAttemptError); e != "" {
				v.LastAttempt = append(v.LastAttempt, views.KV{K: "Error", V: e})
			}
		}
		if st.TaintedAt != nil {
			v.Tainted = deref(st.TaintReason)
		}
	}
	if canOperate(c) {
		v.RebuildHref = rebuildHref(a.Def.Key, key)
	}
	if err := h.partitionStaleness(c, a, key, &v); err != nil {
		return err
	}
	last := v.Status // the stored status is the last attempt's (missing: none)
	if last == db.StatusMissing {
		last = ""
	}
	hl, lastFailed := catalog.HealthOf(last, st.Materialized, catalog.StaleReason(v.Staleness.Reason))
	v.Health, v.LastAttemptFailed = string(hl), lastFailed
	insts, err := h.Store.Instances(ctx, a.ID, key, 200)
	if err != nil {
		return err
	}
	canonical := ""
	if st.CanonicalInstanceID != nil {
		canonical = *st.CanonicalInstanceID
	}
	runPages := map[string]string{} // run id -> its page, for the runs a backfill ran
	for _, i := range insts {
		row := views.InstanceRow{ID: i.ID, RunID: i.RunID, Status: i.Status, CodeVersion: i.CodeVersion,
			Finished: fmtStamp(loc, i.FinishedAt), Error: deref(i.Error), Metadata: deref(i.Metadata),
			Supersedes: deref(i.SupersedesID), Source: i.Source, Canonical: i.ID == canonical}
		if i.Source == "backfill" {
			row.RunHref = "/runs/" + url.PathEscape(i.RunID)
			runPages[i.RunID] = row.RunHref
		}
		if d := i.Duration(); d > 0 {
			row.Duration = fmtDur(d)
		}
		v.Instances = append(v.Instances, row)
	}
	// The last materialization's and last attempt's run link to its page,
	// as the history's do.
	linkRuns(v.LastMaterialization, runPages)
	linkRuns(v.LastAttempt, runPages)
	return render(c, http.StatusOK, views.PartitionPageView(page(c, a.Def.Key+" / "+key, "overview"), v))
}

// linkRuns links the "Run" of kvs to its page when runPages has one (a
// run a backfill ran; a reported run id has no page).
func linkRuns(kvs []views.KV, runPages map[string]string) {
	for i := range kvs {
		if kvs[i].K == "Run" {
			kvs[i].Href = runPages[kvs[i].V]
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// rebuildHref is the new-backfill form with one partition of asset
// selected (an explicit list, which any partition scheme reads), titled
// after it: the form shows its preview on load.
func rebuildHref(asset, key string) string {
	q := url.Values{"asset": {asset}, "selector": {"explicit"}, "keys": {key}, "title": {"Rebuild " + asset + " " + key}}
	return "/backfills/new?" + q.Encode()
}
