package views

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func graphOf(keys ...string) []GraphNode {
	ns := make([]GraphNode, len(keys))
	for i, k := range keys {
		ns[i] = GraphNode{Key: k}
	}
	return ns
}

// Each node sits one layer right of its furthest upstream: a diamond with a
// shortcut (a→d beside a→b→c→d) puts d in layer 3, not 1.
func TestLineageLongestPathLayers(t *testing.T) {
	nodes := graphOf("d", "c", "b", "a", "lone")
	edges := []GraphEdge{{3, 2, "identity"}, {2, 1, "identity"}, {1, 0, "all"}, {3, 0, "time_window"}}
	l := LayoutLineage(nodes, edges)
	got := map[string]int{}
	for _, n := range l.Nodes {
		got[n.Key] = n.Layer
	}
	want := map[string]int{"a": 0, "b": 1, "c": 2, "d": 3, "lone": 0}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("layers %v, want %v", got, want)
	}
	if l.Layers != 4 {
		t.Errorf("%d layers, want 4", l.Layers)
	}
	// Layers run left to right: every edge goes rightwards, from its
	// upstream's right side to its downstream's left side.
	for _, e := range l.Edges {
		from, to := l.Nodes[e.From], l.Nodes[e.To]
		if !(from.X+from.W < to.X) {
			t.Errorf("edge %s→%s does not run rightwards (%d+%d, %d)", from.Key, to.Key, from.X, from.W, to.X)
		}
		if !strings.HasPrefix(e.D, fmt.Sprintf("M%d %d", from.X+from.W, from.Y+lineageNodeH/2)) {
			t.Errorf("edge %s→%s starts at %q", from.Key, to.Key, e.D)
		}
		if !strings.HasSuffix(e.D, fmt.Sprintf(" %d %d", to.X, to.Y+lineageNodeH/2)) && !(from.Y == to.Y && strings.HasSuffix(e.D, fmt.Sprintf("H%d", to.X))) {
			t.Errorf("edge %s→%s ends at %q", from.Key, to.Key, e.D)
		}
	}
	// The shortcut a→d passes layers 1 and 2 through a dummy row each: its
	// path has three steps (a curve, or a straight line when level) and a
	// straight pass through each of the two dummy rows; the others a step.
	for _, e := range l.Edges {
		steps := strings.Count(e.D, "C") + strings.Count(e.D, "H")
		want := 2*(l.Nodes[e.To].Layer-l.Nodes[e.From].Layer) - 1
		if steps != want {
			t.Errorf("edge %s→%s has %d steps, want %d: %s", l.Nodes[e.From].Key, l.Nodes[e.To].Key, steps, want, e.D)
		}
	}
}

// Barycenter ordering untangles what the given order crosses: two
// sources listed in one order and their children in the other order
// cross once as given, never once laid out.
func TestLineageBarycenterRemovesCrossings(t *testing.T) {
	nodes := graphOf("a", "b", "a.child", "b.child")
	// given order: sources a, b; children listed b.child first
	nodes = []GraphNode{nodes[0], nodes[1], nodes[3], nodes[2]}
	edges := []GraphEdge{{0, 3, "identity"}, {1, 2, "identity"}}
	l := LayoutLineage(nodes, edges)
	if l.Crossings != 0 {
		t.Fatalf("%d crossings, want 0", l.Crossings)
	}
	a, b, ac, bc := l.Nodes[0], l.Nodes[1], l.Nodes[3], l.Nodes[2]
	if (a.Y < b.Y) != (ac.Y < bc.Y) {
		t.Errorf("children not in their parents' order: a %d b %d, a.child %d b.child %d", a.Y, b.Y, ac.Y, bc.Y)
	}
}

// On random layered graphs of 200 assets the layout never has more
// crossings than the given order had, every node of a layer has its own
// row, the rows do not overlap, and it is the same on every call.
func TestLineageRandomGraphs(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 24))
	for round := range 20 {
		n := 200
		nodes := make([]GraphNode, n)
		for i := range nodes {
			nodes[i] = GraphNode{Key: fmt.Sprintf("g%02d.asset_%03d", i%12, i)}
		}
		var edges []GraphEdge
		for to := 1; to < n; to++ {
			for k := r.IntN(3); k > 0; k-- {
				from := r.IntN(to)
				edges = append(edges, GraphEdge{from, to, []string{"identity", "time_window", "all"}[r.IntN(3)]})
			}
		}
		l := LayoutLineage(nodes, edges)
		if again := LayoutLineage(nodes, edges); !reflect.DeepEqual(l, again) {
			t.Fatalf("round %d: two layouts of the same graph differ", round)
		}
		seen := map[[2]int]string{}
		for _, nd := range l.Nodes {
			at := [2]int{nd.X, nd.Y}
			if other, ok := seen[at]; ok {
				t.Fatalf("round %d: %s and %s share a box at %v", round, nd.Key, other, at)
			}
			seen[at] = nd.Key
			if nd.X < 0 || nd.Y < 0 || nd.X+nd.W > l.W || nd.Y+lineageNodeH > l.H {
				t.Fatalf("round %d: %s at %d,%d+%d outside %dx%d", round, nd.Key, nd.X, nd.Y, nd.W, l.W, l.H)
			}
		}
		for _, e := range edges {
			if l.Nodes[e.To].Layer <= l.Nodes[e.From].Layer {
				t.Fatalf("round %d: edge %d→%d not rightwards", round, e.From, e.To)
			}
		}
		if round == 0 {
			t.Logf("%d crossings laid out, %d in the given order", l.Crossings, naiveCrossings(l, edges))
		}
		if l.Crossings > naiveCrossings(l, edges) {
			t.Errorf("round %d: %d crossings laid out, %d in the given order", round, l.Crossings, naiveCrossings(l, edges))
		}
	}
}

// naiveCrossings counts the crossings of l's layering with each layer in
// the nodes' given order (dummies of long edges after the nodes, in edge
// order): what the layout had before the barycenter sweeps.
func naiveCrossings(l Lineage, edges []GraphEdge) int {
	type v struct{ layer, pos int }
	perLayer := map[int]int{}
	at := make([]v, len(l.Nodes))
	for i, nd := range l.Nodes {
		at[i] = v{nd.Layer, perLayer[nd.Layer]}
		perLayer[nd.Layer]++
	}
	type seg struct{ layer, a, b int }
	var segs []seg
	for _, e := range edges {
		prev := at[e.From]
		for lay := prev.layer + 1; lay < at[e.To].layer; lay++ {
			d := v{lay, perLayer[lay]}
			perLayer[lay]++
			segs = append(segs, seg{prev.layer, prev.pos, d.pos})
			prev = d
		}
		segs = append(segs, seg{prev.layer, prev.pos, at[e.To].pos})
	}
	c := 0
	for i := range segs {
		for j := i + 1; j < len(segs); j++ {
			if segs[i].layer == segs[j].layer && (segs[i].a-segs[j].a)*(segs[i].b-segs[j].b) < 0 {
				c++
			}
		}
	}
	return c
}

// Labels longer than their column's widest box are cut with "…" (the full
// key is the node's title); short ones are kept whole; the empty graph has
// no size; a cycle (refused by the workspace) still lays out every node.
func TestLineageLabelsEmptyAndCycles(t *testing.T) {
	long := strings.Repeat("x", 80)
	l := LayoutLineage(graphOf("short", long), nil)
	if l.Nodes[0].Label != "short" {
		t.Errorf("short label %q", l.Nodes[0].Label)
	}
	if got := l.Nodes[1].Label; !strings.HasSuffix(got, "…") || len([]rune(got))*lineageCharW > lineageMaxW {
		t.Errorf("long label %q (%d characters) not cut to its box", got, len([]rune(got)))
	}
	if e := LayoutLineage(nil, nil); e.W != 0 || e.H != 0 || len(e.Nodes) != 0 {
		t.Errorf("empty graph: %+v", e)
	}
	c := LayoutLineage(graphOf("a", "b", "c"), []GraphEdge{{0, 1, "identity"}, {1, 2, "identity"}, {2, 1, "identity"}, {5, 0, "all"}})
	if len(c.Nodes) != 3 || len(c.Edges) != 3 {
		t.Fatalf("cycle: %d nodes, %d edges (the out-of-range edge dropped)", len(c.Nodes), len(c.Edges))
	}
}

// BenchmarkLayoutLineage lays out random graphs of 200 and 1,000 assets
// (each reading up to two earlier ones, so long edges and crossings abound).
func BenchmarkLayoutLineage(b *testing.B) {
	for _, n := range []int{200, 1000} {
		r := rand.New(rand.NewPCG(1, uint64(n)))
		nodes := make([]GraphNode, n)
		for i := range nodes {
			nodes[i] = GraphNode{Key: fmt.Sprintf("g%02d.asset_%04d", i%12, i)}
		}
		var edges []GraphEdge
		for to := 1; to < n; to++ {
			for k := r.IntN(3); k > 0; k-- {
				edges = append(edges, GraphEdge{r.IntN(to), to, "identity"})
			}
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				LayoutLineage(nodes, edges)
			}
		})
	}
}
