package handlers

import "encoding/json"

// An API range (a backfill's selector, a pushed event) starts at the
// asset's first partition when start is left out and ends at its last when
// end is: that is what a client means by leaving it out. A start or end
// sent as "" is a client's unset variable, not a wish for every partition,
// so it is a 400 that names the field rather than a backfill of the whole
// history (as the CLI refuses an empty --start or --end).

// emptyRangeBound is the 400 of a start or end sent as "" in body, a JSON
// object, under obj ("selector"; "" for the object itself), nil when
// neither is. body was decoded already: a value that is not a string is
// not this check's to name.
func emptyRangeBound(body []byte, obj string) error {
	var bounds struct{ Start, End *string }
	if obj == "" {
		if json.Unmarshal(body, &bounds) != nil {
			return nil
		}
	} else {
		var outer map[string]json.RawMessage
		if json.Unmarshal(body, &outer) != nil || outer[obj] == nil || json.Unmarshal(outer[obj], &bounds) != nil {
			return nil
		}
	}
	switch {
	case bounds.Start != nil && *bounds.Start == "":
		field := joinPath(obj, "start")
		return BadRequest(field, `%s is empty; leave start out to begin at the asset's first partition, or give a partition key`, field)
	case bounds.End != nil && *bounds.End == "":
		field := joinPath(obj, "end")
		return BadRequest(field, `%s is empty; leave end out to run to the asset's last partition, or give a partition key`, field)
	}
	return nil
}
