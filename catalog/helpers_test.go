package catalog

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// built is the scheme newScheme builds of arg, failing t on its error.
func built[A, S any](t testing.TB, newScheme func(A) (S, error), arg A) S {
	t.Helper()
	s, err := newScheme(arg)
	if err != nil {
		t.Fatalf("%+v: %v", arg, err)
	}
	return s
}

func mustTime(t testing.TB, p TimeParams) TimeScheme {
	t.Helper()
	return built(t, NewTimeScheme, p)
}

func mustStatic(t testing.TB, keys ...string) StaticScheme {
	t.Helper()
	return built(t, NewStaticScheme, keys)
}

func mustMulti(t testing.TB, dims ...Dimension) MultiScheme {
	t.Helper()
	return built(t, NewMultiScheme, dims)
}

func mustDynamic(t testing.TB, set string) DynamicScheme {
	t.Helper()
	return built(t, NewDynamicScheme, set)
}

func at(t testing.TB, s, tz string) time.Time {
	t.Helper()
	loc, err := time.LoadLocation(tz)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"2006-01-02 15:04", "2006-01-02"} {
		if v, err := time.ParseInLocation(l, s, loc); err == nil {
			return v
		}
	}
	t.Fatalf("bad time %q", s)
	return time.Time{}
}

func wantKeyErr(t testing.TB, err error, reason string) {
	t.Helper()
	var ke *KeyError
	if !errors.As(err, &ke) {
		t.Fatalf("want *KeyError containing %q, got %v", reason, err)
	}
	if !strings.Contains(ke.Error(), reason) {
		t.Fatalf("error %q does not contain %q", ke.Error(), reason)
	}
}

func wantParamErr(t testing.TB, err error, param, msg string) {
	t.Helper()
	var pe *ParamError
	if !errors.As(err, &pe) {
		t.Fatalf("want *ParamError(%s), got %v", param, err)
	}
	if pe.Param != param || !strings.Contains(pe.Message, msg) {
		t.Fatalf("got ParamError{%q, %q}, want param %q containing %q", pe.Param, pe.Message, param, msg)
	}
}
