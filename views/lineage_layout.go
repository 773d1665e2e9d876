package views

import (
	"slices"
	"sort"
	"strconv"
	"strings"
)

// GraphNode is an asset of a lineage graph, before layout.
type GraphNode struct {
	Key, Href string
	// Health is one of the Health* words (the node's colour).
	Health string
	// Focus marks the asset whose page shows the graph; Dim an asset the
	// overview's filter leaves out.
	Focus, Dim bool
}

// GraphEdge is a dependency: From (upstream) is read by To (downstream),
// both indexes into the nodes; Mapping is the resolved partition mapping
// (identity, time_window, all).
type GraphEdge struct {
	From, To int
	Mapping  string
}

// Node health words (the lineage graph's colours, worst first).
const (
	HealthFailed  = "failed"  // some partition's last run failed
	HealthRunning = "running" // some partition is being built
	HealthStale   = "stale"   // some materialized partition is stale
	HealthMissing = "missing" // nothing materialized yet
	HealthPartial = "partial" // fresh where built, some partitions missing
	HealthFresh   = "fresh"   // every partition materialized and fresh
)

// NodeHealthLabel words a node health for its title and the legend.
func NodeHealthLabel(h string) string {
	switch h {
	case HealthFailed:
		return "has failures"
	case HealthRunning:
		return "running"
	case HealthStale:
		return "stale"
	case HealthMissing:
		return "never materialized"
	case HealthPartial:
		return "partly materialized"
	}
	return "fresh"
}

// MappingLabel words a partition mapping for an edge's title and the legend.
func MappingLabel(m string) string {
	switch m {
	case "identity":
		return "identity (same key)"
	case "time_window":
		return "time window"
	case "all":
		return "all-to-one (reads every partition)"
	}
	return m
}

// Lineage is a laid-out graph: node boxes and edge paths in SVG pixels,
// layers left (upstream) to right (downstream).
type Lineage struct {
	Nodes []LaidNode
	Edges []LaidEdge
	W, H  int
	// Layers and Crossings describe the layout (tests and the caption).
	Layers, Crossings int
}

// LaidNode is a node with its layer, its row in the layer and its box.
type LaidNode struct {
	GraphNode
	Layer, Row int
	X, Y, W    int
	Label      string // the key, cut with "…" when longer than its column
}

// LaidEdge is an edge with its SVG path (through the rows its long edge
// passes in the layers between its ends).
type LaidEdge struct {
	From, To int
	Mapping  string
	D        string
}

// Lineage geometry (px).
const (
	lineageNodeH   = 24 // also lineage.templ's rect height and lineage.css's
	lineageRowH    = 34
	lineageGapX    = 64
	lineagePad     = 8
	lineageCharW   = 7 // a 12 px sans-serif character, generously
	lineageMinW    = 90
	lineageMaxW    = 260
	lineageSweeps  = 12
	lineageFontPad = 30 // the text's inset and its health mark
)

// LayoutLineage lays out a dependency graph: longest-path layering (a node
// sits one layer right of its furthest upstream), dummy rows where an edge
// spans several layers, then barycenter ordering (sweeps down and up,
// keeping the order with the fewest crossings), each layer centred on the
// tallest. Nodes keep their given order where nothing decides. Edges
// naming a node out of range are ignored; a cycle (which a workspace
// refuses) is broken where found. Pure: same input, same output.
func LayoutLineage(nodes []GraphNode, edges []GraphEdge) Lineage {
	n := len(nodes)
	var es []GraphEdge
	for _, e := range edges {
		if e.From >= 0 && e.From < n && e.To >= 0 && e.To < n && e.From != e.To {
			es = append(es, e)
		}
	}
	layer := longestPathLayers(n, es)
	// Vertices: the nodes, then a dummy per layer an edge passes.
	vLayer := slices.Clone(layer)
	type seg struct{ a, b int } // vertex a in layer L, b in L+1
	var segs []seg
	chains := make([][]int, len(es)) // each edge's vertices, upstream first
	for i, e := range es {
		lo, hi := layer[e.From], layer[e.To]
		if hi <= lo { // a broken cycle's back edge: drawn, not laid
			chains[i] = []int{e.From, e.To}
			continue
		}
		chain := []int{e.From}
		for l := lo + 1; l < hi; l++ {
			vLayer = append(vLayer, l)
			chain = append(chain, len(vLayer)-1)
		}
		chain = append(chain, e.To)
		for j := 0; j+1 < len(chain); j++ {
			segs = append(segs, seg{chain[j], chain[j+1]})
		}
		chains[i] = chain
	}
	nv, nl := len(vLayer), 0
	for _, l := range vLayer {
		nl = max(nl, l+1)
	}
	up, down := make([][]int, nv), make([][]int, nv)
	for _, s := range segs {
		down[s.a] = append(down[s.a], s.b)
		up[s.b] = append(up[s.b], s.a)
	}
	order := make([][]int, nl) // vertices of each layer, top to bottom
	for v, l := range vLayer {
		order[l] = append(order[l], v)
	}
	pos := make([]float64, nv)
	setPos := func() {
		for _, vs := range order {
			for i, v := range vs {
				pos[v] = float64(i)
			}
		}
	}
	setPos()
	crossings := func() int {
		c := 0
		for l := 0; l+1 < nl; l++ {
			c += layerCrossings(order[l], down, pos)
		}
		return c
	}
	best, bestC := cloneOrder(order), crossings()
	for it := 0; it < lineageSweeps && bestC > 0; it++ {
		if it%2 == 0 {
			for l := 1; l < nl; l++ {
				baryOrder(order[l], up, pos)
			}
		} else {
			for l := nl - 2; l >= 0; l-- {
				baryOrder(order[l], down, pos)
			}
		}
		if c := crossings(); c < bestC {
			best, bestC = cloneOrder(order), c
		}
	}
	order = best
	setPos()

	// Geometry: a column per layer as wide as its longest label allows.
	colW := make([]int, nl)
	for i, nd := range nodes {
		colW[layer[i]] = max(colW[layer[i]], min(lineageMaxW, max(lineageMinW, len([]rune(nd.Key))*lineageCharW+lineageFontPad)))
	}
	colX := make([]int, nl)
	x := lineagePad
	for l := range nl {
		colX[l] = x
		x += colW[l] + lineageGapX
	}
	tallest := 0
	for _, vs := range order {
		tallest = max(tallest, len(vs))
	}
	// Every layer starts at the top: a box that shows the graph's top left
	// corner first (a wide graph scrolls) shows nodes, not the empty space
	// a short layer centred beside a tall one leaves above it.
	vy := make([]int, nv) // each vertex's middle
	for _, vs := range order {
		for i, v := range vs {
			vy[v] = lineagePad + i*lineageRowH + lineageNodeH/2
		}
	}
	out := Lineage{Layers: nl, Crossings: bestC, H: 2*lineagePad + max(0, tallest*lineageRowH-(lineageRowH-lineageNodeH))}
	out.W = max(lineagePad, x-lineageGapX+lineagePad)
	if n == 0 {
		out.W, out.H = 0, 0
	}
	for i, nd := range nodes {
		l := layer[i]
		out.Nodes = append(out.Nodes, LaidNode{GraphNode: nd, Layer: l, Row: int(pos[i]), X: colX[l], Y: vy[i] - lineageNodeH/2, W: colW[l], Label: cutLabel(nd.Key, (colW[l]-lineageFontPad)/lineageCharW)})
	}
	for i, e := range es {
		var d strings.Builder
		chain := chains[i]
		px, py := colX[layer[e.From]]+colW[layer[e.From]], vy[e.From]
		d.WriteString("M" + strconv.Itoa(px) + " " + strconv.Itoa(py))
		for j := 1; j < len(chain); j++ {
			v := chain[j]
			l := vLayer[v]
			qx, qy := colX[l], vy[v]
			if qy == py { // level: a straight line
				d.WriteString("H" + strconv.Itoa(qx))
			} else {
				mid := (px + qx) / 2
				d.WriteString("C" + strconv.Itoa(mid) + " " + strconv.Itoa(py) + " " + strconv.Itoa(mid) + " " + strconv.Itoa(qy) + " " + strconv.Itoa(qx) + " " + strconv.Itoa(qy))
			}
			if j < len(chain)-1 { // a dummy: pass straight through its column
				px = qx + colW[l]
				d.WriteString("H" + strconv.Itoa(px))
			}
			py = qy
		}
		out.Edges = append(out.Edges, LaidEdge{From: e.From, To: e.To, Mapping: e.Mapping, D: d.String()})
	}
	return out
}

// longestPathLayers puts each node one layer right of its furthest
// upstream (sources in layer 0), in topological order (Kahn); the nodes of
// a cycle, left when no node is free, are freed one at a time in index
// order (their edges from later nodes of the cycle then point backwards).
func longestPathLayers(n int, es []GraphEdge) []int {
	layer := make([]int, n)
	indeg := make([]int, n)
	outs := make([][]int, n)
	for _, e := range es {
		indeg[e.To]++
		outs[e.From] = append(outs[e.From], e.To)
	}
	done := make([]bool, n)
	var queue []int
	for v := range n {
		if indeg[v] == 0 {
			queue = append(queue, v)
		}
	}
	for left := n; left > 0; {
		if len(queue) == 0 { // a cycle: free its first node
			for v := range n {
				if !done[v] {
					queue = append(queue, v)
					indeg[v] = 0
					break
				}
			}
		}
		v := queue[0]
		queue = queue[1:]
		if done[v] {
			continue
		}
		done[v] = true
		left--
		for _, w := range outs[v] {
			if done[w] {
				continue
			}
			layer[w] = max(layer[w], layer[v]+1)
			if indeg[w]--; indeg[w] == 0 {
				queue = append(queue, w)
			}
		}
	}
	return layer
}

// baryOrder sorts a layer's vertices by the mean position of their
// neighbours in the layer just swept (a vertex without any keeps its own
// position), stably, and renumbers their positions.
func baryOrder(vs []int, nb [][]int, pos []float64) {
	key := make(map[int]float64, len(vs))
	for _, v := range vs {
		if len(nb[v]) == 0 {
			key[v] = pos[v]
			continue
		}
		s := 0.0
		for _, u := range nb[v] {
			s += pos[u]
		}
		key[v] = s / float64(len(nb[v]))
	}
	sort.SliceStable(vs, func(i, j int) bool { return key[vs[i]] < key[vs[j]] })
	for i, v := range vs {
		pos[v] = float64(i)
	}
}

// layerCrossings counts the crossings of the segments from layer vs to the
// next: two segments cross when their ends are in opposite orders.
func layerCrossings(vs []int, down [][]int, pos []float64) int {
	type pair struct{ a, b float64 }
	var ps []pair
	for _, v := range vs {
		for _, w := range down[v] {
			ps = append(ps, pair{pos[v], pos[w]})
		}
	}
	c := 0
	for i := range ps {
		for j := i + 1; j < len(ps); j++ {
			if (ps[i].a-ps[j].a)*(ps[i].b-ps[j].b) < 0 {
				c++
			}
		}
	}
	return c
}

func cloneOrder(o [][]int) [][]int {
	c := make([][]int, len(o))
	for i, vs := range o {
		c[i] = slices.Clone(vs)
	}
	return c
}

// cutLabel keeps s within n characters, ending a cut one with "…".
func cutLabel(s string, n int) string {
	r := []rune(s)
	if len(r) <= n || n < 2 {
		return s
	}
	return string(r[:n-1]) + "…"
}
