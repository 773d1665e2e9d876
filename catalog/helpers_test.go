package catalog

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func mustTime(t testing.TB, p TimeParams) TimeScheme {
	t.Helper()
	s, err := NewTimeScheme(p)
	if err != nil {
		t.Fatalf("NewTimeScheme(%+v): %v", p, err)
	}
	return s
}

func mustStatic(t testing.TB, keys ...string) StaticScheme {
	t.Helper()
	s, err := NewStaticScheme(keys)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustMulti(t testing.TB, dims ...Dimension) MultiScheme {
	t.Helper()
	s, err := NewMultiScheme(dims)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustDynamic(t testing.TB, set string) DynamicScheme {
	t.Helper()
	s, err := NewDynamicScheme(set)
	if err != nil {
		t.Fatal(err)
	}
	return s
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
