package cli

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// serveSetting is one serve flag with its environment variable: the flag
// beats the variable, and both are checked the same way.
type serveSetting[T any] struct {
	flag, env string
	parse     func(string) (T, error)
	ok        func(T) bool
	// envWant and flagWant say what a bad value should have been, after
	// "TESSERA_… must be" and "--… must be".
	envWant, flagWant string
}

// value is the setting: given (the flag's value, or its default) unless the
// flag was not given (changed) and the variable is set, whose value then
// counts. A value that fails ok is a usage error naming the flag or the
// variable, what it must be and what it was.
func (s serveSetting[T]) value(changed func(flag string) bool, given T) (T, error) {
	if !changed(s.flag) {
		if v := os.Getenv(s.env); v != "" {
			n, err := s.parse(strings.TrimSpace(v))
			if err != nil || !s.ok(n) {
				return given, usageErr("%s must be %s, got %q", s.env, s.envWant, v)
			}
			return n, nil
		}
	} else if !s.ok(given) {
		return given, usageErr("--%s must be %s, got %v", s.flag, s.flagWant, given)
	}
	return given, nil
}

// positiveInt is a serve setting of a whole number of at least 1.
func positiveInt(flag, env string) serveSetting[int] {
	return serveSetting[int]{flag: flag, env: env, parse: strconv.Atoi, ok: func(n int) bool { return n >= 1 },
		envWant: "a positive number", flagWant: "a positive number"}
}

// durationSetting is a serve setting of a duration.
func durationSetting(flag, env string, ok func(time.Duration) bool, envWant, flagWant string) serveSetting[time.Duration] {
	return serveSetting[time.Duration]{flag: flag, env: env, parse: time.ParseDuration, ok: ok, envWant: envWant, flagWant: flagWant}
}
