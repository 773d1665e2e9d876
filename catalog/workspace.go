package catalog

import (
	_ "embed"
	"sort"
	"time"
)

// Executor kinds.
const (
	ExecutorCommand = "command"
	ExecutorHTTP    = "http"
	ExecutorDemo    = "demo"
)

// Built-in defaults, used when the workspace's defaults section omits them.
const (
	DefaultMaxAttempts = 3
	DefaultBackoff     = 30 * time.Second
	DefaultTimeout     = time.Hour
	DefaultGroup       = "default"
)

// Workspace is a parsed and validated workspace file.
type Workspace struct {
	File     string
	Pools    map[string]Pool
	Defaults Defaults
	Assets   []*Asset // file order
	// Schedules launch backfills as time passes (file order).
	Schedules []*Schedule
	// Sensors launch backfills when something outside happens (file order).
	Sensors []*Sensor
	byKey   map[string]*Asset
	// topoRank is each asset's position in TopoOrder, computed once when
	// the workspace is parsed (a backfill request of one asset in a
	// workspace of thousands need not order them all).
	topoRank map[string]int
}

// Pool is a shared concurrency limit.
type Pool struct {
	Name              string
	MaxConcurrentRuns int
	Throttle          *Throttle // nil: unthrottled
	Line              int
}

// RetryPolicy says how often and how far apart a failed run is retried.
type RetryPolicy struct {
	MaxAttempts int // total attempts including the first (>= 1)
	Backoff     time.Duration
}

// Defaults apply to every asset that does not set its own values.
type Defaults struct {
	Retries RetryPolicy
	Timeout time.Duration
}

// Asset is a named, partitioned data product.
type Asset struct {
	Key, Group, Description, CodeVersion, Pool string
	Scheme                                     Scheme
	Deps                                       []Dep
	Freshness                                  *Freshness // nil: no policy
	Retries                                    RetryPolicy
	Timeout                                    time.Duration
	Executor                                   Executor
	Line                                       int // line of the asset in the file
}

// Freshness is a freshness policy. MaxLag: the newest partition's window must
// have ended at most MaxLag ago. DeadlineHHMM: the previous day's partition
// (in Location) must exist by that time of day. Either or both may be set.
type Freshness struct {
	MaxLag       time.Duration
	DeadlineHHMM string         // "09:00", or ""
	Location     *time.Location // for DeadlineHHMM (default UTC)
}

// Executor says how partitions are materialized.
type Executor struct {
	Kind string // ExecutorCommand, ExecutorHTTP or ExecutorDemo
	// Command is the argv of a command executor. With Shell, Command has a
	// single element: a script run with `sh -c`.
	Command []string
	Shell   bool
	Env     map[string]string
	Dir     string
	HTTP    *HTTPExecutor
	Demo    *DemoExecutor
}

// HTTPExecutor POSTs the work description to URL.
type HTTPExecutor struct {
	URL      string
	Timeout  time.Duration // 0: the asset's timeout
	TokenURL string
	Headers  map[string]string
}

// DemoExecutor simulates work.
type DemoExecutor struct {
	MinDuration, MaxDuration time.Duration
	FailureRate              float64
	// FailKeys always fail their first FailAttempts attempts after the
	// server starts, then succeed: a failure the demo can show for sure
	// (final once the asset's retries are used up), which Retry failed
	// then recovers.
	FailKeys     []string
	FailAttempts int
}

// Asset returns the asset with the given key, or nil.
func (w *Workspace) Asset(key string) *Asset {
	if w.byKey == nil {
		w.byKey = make(map[string]*Asset, len(w.Assets))
		for _, a := range w.Assets {
			w.byKey[a.Key] = a
		}
	}
	return w.byKey[key]
}

// named is a declaration the workspace finds by its name (a schedule, a
// sensor).
type named interface{ itemName() string }

// byName is the item of items named name, or the zero value (nil).
func byName[T named](items []T, name string) T {
	for _, it := range items {
		if it.itemName() == name {
			return it
		}
	}
	var none T
	return none
}

// namesOf lists the names of items, in order.
func namesOf[T named](items []T) []string {
	names := make([]string, len(items))
	for i, it := range items {
		names[i] = it.itemName()
	}
	return names
}

// Dependents returns the assets that depend directly on key, in file order.
func (w *Workspace) Dependents(key string) []*Asset {
	var out []*Asset
	for _, a := range w.Assets {
		for _, d := range a.Deps {
			if d.Asset == key {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// TopoOrder returns the assets with every upstream before its downstreams
// (file order among independent assets). The workspace has no cycles.
func (w *Workspace) TopoOrder() []*Asset {
	done := map[string]bool{}
	out := make([]*Asset, 0, len(w.Assets))
	var visit func(a *Asset)
	visit = func(a *Asset) {
		if done[a.Key] {
			return
		}
		done[a.Key] = true
		for _, d := range a.Deps {
			if u := w.Asset(d.Asset); u != nil {
				visit(u)
			}
		}
		out = append(out, a)
	}
	for _, a := range w.Assets {
		visit(a)
	}
	return out
}

// SortTopo orders assets of this workspace as TopoOrder lists them
// (assets it does not know last, in their order).
func (w *Workspace) SortTopo(assets []*Asset) {
	if len(assets) < 2 {
		return
	}
	rank := w.topoRank
	if rank == nil {
		rank = topoRanks(w)
	}
	sort.SliceStable(assets, func(i, j int) bool {
		ri, ok := rank[assets[i].Key]
		if !ok {
			ri = len(rank)
		}
		rj, ok := rank[assets[j].Key]
		if !ok {
			rj = len(rank)
		}
		return ri < rj
	})
}

func topoRanks(w *Workspace) map[string]int {
	order := w.TopoOrder()
	rank := make(map[string]int, len(order))
	for i, a := range order {
		rank[a.Key] = i
	}
	return rank
}

// DefaultWorkspaceYAML is the embedded default workspace; it doubles as
// documentation of the workspace file format.
//
//go:embed default_workspace.yaml
var DefaultWorkspaceYAML []byte

// DefaultWorkspaceFile is the file name used for the embedded workspace.
const DefaultWorkspaceFile = "default_workspace.yaml"

// DefaultWorkspace parses the embedded default workspace; it panics if the
// embedded file is invalid (a test guards it).
func DefaultWorkspace() *Workspace {
	w, err := ParseWorkspace(DefaultWorkspaceFile, DefaultWorkspaceYAML)
	if err != nil {
		panic("catalog: embedded default workspace is invalid:\n" + err.Error())
	}
	return w
}
