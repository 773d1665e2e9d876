package handlers

import (
	"context"

	"github.com/tessera-dev/tessera/catalog"
)

// maxDimensionChoices bounds the dimension picker's list: past it the
// picker is a text box that suggests the first ones.
const maxDimensionChoices = 500

// dimensionChoices lists "name=value" for each value of each dimension
// other than time of the multi-dimensional assets among assets, in
// declared order, once each (the form's and the grid bar's dimension
// picker); complete is false when there were more than
// maxDimensionChoices.
func (h *Handler) dimensionChoices(ctx context.Context, assets []*catalog.Asset) (choices []string, complete bool, err error) {
	seen := map[string]bool{}
	var dyn catalog.DynamicKeys // read once, for the first asset that needs them
	now := h.Now()
	for _, a := range assets {
		ms, ok := a.Scheme.(catalog.MultiScheme)
		if !ok {
			continue
		}
		if dyn == nil && hasDynamic(a.Scheme) {
			if dyn, err = h.Store.LoadDynamicKeys(ctx); err != nil {
				return nil, false, err
			}
		}
		ds, ok := a.Scheme.Space(now, dyn).(interface{ DimSpaces() []catalog.Space })
		if !ok {
			continue
		}
		for i, d := range ms.Dimensions() {
			if i == ms.TimeDim() {
				continue
			}
			sp := ds.DimSpaces()[i]
			n := min(sp.Len(), maxDimensionChoices+1)
			for _, v := range sp.Keys(0, n) {
				c := d.Name + "=" + v
				if seen[c] {
					continue
				}
				if len(choices) == maxDimensionChoices {
					return choices, false, nil
				}
				seen[c] = true
				choices = append(choices, c)
			}
		}
	}
	return choices, true, nil
}
