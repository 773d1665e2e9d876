package handlers

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

// retrySelectionText begins the selection of a Retry failed child, followed
// by its parent.
const retrySelectionText = "the failed and upstream-failed partitions of "

// describeSelection words a backfill's selector for people: "range A … B",
// "missing, failed within A … B, region = eu", "explicit list of 3 keys".
func describeSelection(b db.Backfill) string {
	parent := "its parent"
	if b.ParentBackfillID != nil {
		parent = *b.ParentBackfillID
	}
	return describeSelectorOf(b.Selector, parent)
}

// describeSelectorOf words a stored selector; parent names the backfill a
// retry selector takes its failed partitions from.
func describeSelectorOf(stored, parent string) string {
	var sel struct {
		storedSelector
		Count int64    `json:"count"`
		Keys  []string `json:"keys"`
	}
	if err := json.Unmarshal([]byte(stored), &sel); err != nil {
		return stored
	}
	within := ""
	switch {
	case sel.Start != "" && sel.End != "":
		within = sel.Start + " … " + sel.End
	case sel.Start != "":
		within = "from " + sel.Start
	case sel.End != "":
		within = "up to " + sel.End
	}
	var out string
	switch sel.Type {
	case "range":
		out = "range " + within
		if within == "" {
			out = "every partition"
		}
	case "explicit":
		n := sel.Count
		if n == 0 {
			n = int64(len(sel.Keys))
		}
		out = fmt.Sprintf("explicit list of %s key%s", views.Num(n), plural(n))
	case "retry":
		out = retrySelectionText + parent
	case "filter":
		out = "only " + strings.Join(sel.Statuses, ", ")
		if len(sel.Statuses) == 0 {
			out = "every partition"
		}
		if within != "" {
			out += " within " + within
		}
	default:
		return stored
	}
	for _, name := range slices.Sorted(maps.Keys(sel.Dimensions)) {
		out += ", " + name + " = " + strings.Join(sel.Dimensions[name], " or ")
	}
	return out
}

func failedCount(rfs []db.RunFailures) int {
	n := 0
	for _, rf := range rfs {
		n += len(rf.Parts)
	}
	return n
}
