package handlers

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/jobs"
)

// decodeBackfillBody reads the explicit key list out of the body itself;
// for every body it must decode what decodeStrict decodes and refuse what
// decodeStrict refuses with the same error (field, message, hint), byte
// offsets included.
func TestDecodeBackfillBodyAgreesWithDecodeStrict(t *testing.T) {
	t.Parallel()
	bodies := []string{
		`{"assets":["a.daily"],"selector":{"type":"explicit","keys":["2025-01-01","2025-01-02"]},"chunk_size":2}`,
		`{"selector":{"keys":["2025-01-01"],"type":"explicit"},"assets":["a.daily"]}`,
		"\n\n  { \"assets\" : [ \"a.daily\" ] ,\r\n \"selector\" :\t{ \"type\" : \"explicit\" , \"keys\" : [ \"a\" ,\n\"b\" ] } }  \n",
		`{"assets":["a.daily"],"title":"t","priority":-3,"max_concurrent_runs":7,"selector":{"type":"explicit","keys":["x]y","a,b","c:d","{e}","é ü","\"q\""]}}`,
		`{"assets":["a.daily"],"selector":{"type":"explicit","keys":["2025-01-0\u0031","2025-01-01"]}}`,
		`{"assets":["a.daily"],"title":"\"selector\":{\"keys\":[\"x\"]}","selector":{"type":"explicit","keys":["k"]}}`,
		`{"assets":["a.daily"],"selector":{"type":"explicit","keys":["k"]},"selector":{"type":"range"}}`,
		`{"assets":["a.daily"],"selector":{"type":"explicit","keys":["k"],"keys":["j"]}}`,
		`{"assets":["a.daily"],"selector":{"type":"explicit","Keys":["k"]}}`,
		`{"assets":["a.daily"],"Selector":{"type":"explicit","keys":["k"]}}`,
		`{"assets":["a.daily"],"selector":{"type":"explicit","keys":null}}`,
		`{"assets":["a.daily"],"selector":{"type":"explicit","keys":[]}}`,
		`{"assets":["a.daily"],"selector":{"type":"explicit","keys":"k"}}`,
		`{"assets":["a.daily"],"selector":{"type":"explicit","keys":[["k"]]}}`,
		`{"assets":["a.daily"],"selector":{"type":"explicit","keys":["k",3,"j"]}}`,
		`{"assets":["a.daily"],"selector":{"type":"explicit","keys":["k",null]}}`,
		`{"assets":["a.daily"],"selector":{"type":"explicit","keys":["k","j",]}}`,
		`{"assets":["a.daily"],"selector":{"type":"explicit","keys":["k" "j"]}}`,
		`{"assets":["a.daily"],"selector":{"type":"explicit","keys":["k","j"]}} trailing`,
		`{"assets":["a.daily"],"selector":{"type":"explicit","keys":["k","j"]}}{}`,
		`{"assets":["a.daily"],"selector":{"type":"explicit","keys":["k","j`,
		`{"assets":["a.daily"],"selector":{"type":"explicit","keys":["k","j"]`,
		`{"assets":["a.daily"],"selector":{"type":"explicit","keys":["k","j"]},"chunk_size":"2"}`,
		`{"assets":["a.daily"],"selector":{"type":"explicit","keys":["k","j"]},"chunks":2}`,
		`{"assets":["a.daily"],"selector":{"type":"explicit","keys":["k","j"],"start":"2025-01-01"}}`,
		`{"assets":["a.daily"],"selector":{"type":"filter","dimensions":{"keys":["k"]},"keys":["k"]}}`,
		`{"assets":["a.daily"],"keys":["k"],"selector":{"type":"explicit"}}`,
		`{"assets":[null],"selector":{"type":"explicit","keys":["k"]}}`,
		"{\"assets\":[\"a.daily\"],\"selector\":{\"type\":\"explicit\",\"keys\":[\"k\",\"j\xff\"]}}",
		"{\"assets\":[\"a.daily\"],\"selector\":{\"type\":\"explicit\",\"keys\":[\"k\",\"j\\udc00\"]}}",
		"{\"assets\":[\"a.daily\"],\"selector\":{\"type\":\"explicit\",\"keys\":[\"k\",\"j\tk\"]}}",
		"{\"assets\":[\"a.d\xffaily\"],\"selector\":{\"type\":\"explicit\",\"keys\":[\"k\"]}}",
		`{"assets":["a.daily"],"selector":{"type":"range","start":"2025-01-01"}}`,
		`[{"selector":{"keys":["k"]}}]`,
		`null`, ``, `   `, `{}`, `"selector"`,
	}
	check := func(body string) {
		t.Helper()
		got, want := jobs.NewRequest(), jobs.NewRequest()
		gerr := decodeBackfillBody([]byte(body), &got)
		werr := decodeStrictBody([]byte(body), &want, false)
		if !reflect.DeepEqual(gerr, werr) || !reflect.DeepEqual(got, want) {
			t.Fatalf("body %q:\n decodeBackfillBody: %+v, %v\n decodeStrict:       %+v, %v", body, got, gerr, want, werr)
		}
	}
	for _, b := range bodies {
		check(b)
	}
	// Random damage to valid bodies: a character replaced, inserted or
	// taken out, once or twice.
	r := rand.New(rand.NewPCG(3, 5))
	chars := []byte(`"[]{},: \x\u0031nul3` + "\xff\t")
	for range 4000 {
		b := []byte(bodies[r.IntN(6)])
		for range 1 + r.IntN(2) {
			i := r.IntN(len(b))
			switch r.IntN(3) {
			case 0:
				b[i] = chars[r.IntN(len(chars))]
			case 1:
				b = append(b[:i], append([]byte{chars[r.IntN(len(chars))]}, b[i:]...)...)
			default:
				b = append(b[:i], b[i+1:]...)
			}
		}
		check(string(b))
	}
}

// The keys of a list read straight from the body are the keys as sent,
// in their order, duplicates included (the engine drops them).
func TestExplicitKeyListReadsTheKeysAsSent(t *testing.T) {
	t.Parallel()
	keys := []string{"2025-01-03", "x]y", "a,b", "2025-01-03", "é ü", "{}"}
	body := `{"assets":["a.daily"], "selector": {"type": "explicit", "keys": [ "` + strings.Join(keys, `" , "`) + `" ] }, "title": "t"}`
	lo, hi, got, ok := explicitKeyList([]byte(body))
	if !ok || !reflect.DeepEqual(got, keys) || body[lo] != '[' || body[hi-1] != ']' || !strings.HasPrefix(body[hi:], " }, \"title\"") {
		t.Fatalf("explicitKeyList = %d, %d, %q, %v", lo, hi, got, ok)
	}
	for _, b := range []string{
		`{"selector":{"type":"explicit","keys":["a\"b"]}}`, // an escape: decodeStrict reads it
		`{"selector":{"type":"explicit","keys":[]}}`,
		`{"selector":{"type":"explicit"}}`,
		`{"title":"a\nb","selector":{"type":"explicit","keys":["k"]}}`,
	} {
		if _, _, _, ok := explicitKeyList([]byte(b)); ok {
			t.Errorf("explicitKeyList(%s) read it", b)
		}
	}
}
