package catalog

import (
	"fmt"
	"strings"
)

// Default key formats (strftime), as in Dagster.
const (
	DefaultHourlyKeyFormat = "%Y-%m-%d-%H:%M"
	DefaultDateKeyFormat   = "%Y-%m-%d"
)

// strftimeToLayout converts a strftime key format (%Y %m %d %H %M %S %z %%)
// to a Go time layout.
func strftimeToLayout(f string) (string, error) {
	if f == "" {
		return "", fmt.Errorf("key_format must not be empty")
	}
	if !strings.Contains(f, "%") {
		return "", fmt.Errorf("key_format %q has no strftime directive; use directives like %%Y-%%m-%%d", f)
	}
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(f) {
			return "", fmt.Errorf("key_format %q ends with a lone %%", f)
		}
		i++
		switch f[i] {
		case 'Y':
			b.WriteString("2006")
		case 'm':
			b.WriteString("01")
		case 'd':
			b.WriteString("02")
		case 'H':
			b.WriteString("15")
		case 'M':
			b.WriteString("04")
		case 'S':
			b.WriteString("05")
		case 'z':
			b.WriteString("-0700")
		case '%':
			b.WriteString("%")
		default:
			return "", fmt.Errorf("key_format %q uses %%%c; supported directives are %%Y %%m %%d %%H %%M %%S %%z %%%%", f, f[i])
		}
	}
	return b.String(), nil
}

// layoutHasOffset reports whether a Go layout carries a numeric UTC offset.
func layoutHasOffset(layout string) bool {
	for _, z := range []string{"-0700", "-07:00", "-07", "Z0700", "Z07:00", "Z07"} {
		if strings.Contains(layout, z) {
			return true
		}
	}
	return false
}
