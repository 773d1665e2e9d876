package jobs

import "encoding/json"

// storedOutcome is a run request's outcome as an evaluation stores it: a
// dry run's preview keeps what its estimate rests on, so that whoever reads
// the evaluation back words the estimate as the live answer did (jobs words
// no estimate; the preview's Estimate is stored empty).
type storedOutcome struct {
	RequestOutcome
	Preview *storedPreview `json:"preview,omitempty"`
}

// storedPreview is a preview with its estimate's basis, under
// estimate_basis. Previews stored before the basis was kept have none and
// their estimate in words.
type storedPreview struct {
	*Preview
	Basis *EstimateBasis `json:"estimate_basis,omitempty"`
}

// StoredOutcomes is outcomes as an evaluation stores them (JSON, previews
// with their estimate's basis).
func StoredOutcomes(outcomes []RequestOutcome) string {
	out := make([]storedOutcome, len(outcomes))
	for i, o := range outcomes {
		out[i].RequestOutcome = o
		if o.Preview != nil {
			b := o.Preview.Basis
			out[i].Preview = &storedPreview{Preview: o.Preview, Basis: &b}
		}
	}
	return jsonOf(out)
}

// ReadOutcomes reads an evaluation's stored outcomes (StoredOutcomes). A
// preview stored with its basis comes back with it and an empty Estimate,
// to be worded as a live preview is; one stored before the basis was kept
// comes back with its estimate in words and an empty basis.
func ReadOutcomes(stored string) ([]RequestOutcome, error) {
	var in []storedOutcome
	if err := json.Unmarshal([]byte(stored), &in); err != nil {
		return nil, err
	}
	out := make([]RequestOutcome, len(in))
	for i, o := range in {
		out[i] = o.RequestOutcome
		out[i].Preview = nil
		if o.Preview != nil && o.Preview.Preview != nil {
			pv := o.Preview.Preview
			if o.Preview.Basis != nil {
				pv.Basis = *o.Preview.Basis
			}
			out[i].Preview = pv
		}
	}
	return out, nil
}
