package catalog

import "time"

// Reading a time key without the time package's parser and formatter: a
// key format made only of %Y %m %d %H %M %S and the separators - : / space
// T is a fixed-width template, and a key that fits it, with its fields in
// range, is read digit by digit. WindowIndex takes this way when it can
// (a million explicit keys are read in a fraction of the time) and the
// time package's otherwise, which gives the same index or says what is
// wrong; TestDigitLayoutAgreesWithTimeParse holds them to it.

// digitLayout is a key format of fixed-width numeric fields.
type digitLayout struct {
	template string      // the key format with its fields as zeros
	fields   []digitSpan // in the order of the format
	has      [6]bool     // by field kind
}

// Field kinds of a digitLayout, in the order of time.Date's arguments.
const (
	fieldYear = iota
	fieldMonth
	fieldDay
	fieldHour
	fieldMinute
	fieldSecond
)

type digitSpan struct{ at, width, kind int }

// compileDigitLayout compiles the strftime format f of a unit's keys, nil
// when its keys need the time package (another directive or separator, a
// field twice, or the fields the unit needs missing).
func compileDigitLayout(f string, unit Kind) *digitLayout {
	l := &digitLayout{}
	var tmpl []byte
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c != '%' {
			switch c {
			case '-', ':', '/', ' ', 'T':
				tmpl = append(tmpl, c)
				continue
			}
			return nil
		}
		if i+1 >= len(f) {
			return nil
		}
		i++
		kind, width := 0, 2
		switch f[i] {
		case 'Y':
			kind, width = fieldYear, 4
		case 'm':
			kind = fieldMonth
		case 'd':
			kind = fieldDay
		case 'H':
			kind = fieldHour
		case 'M':
			kind = fieldMinute
		case 'S':
			kind = fieldSecond
		default:
			return nil
		}
		if l.has[kind] {
			return nil
		}
		l.has[kind] = true
		l.fields = append(l.fields, digitSpan{at: len(tmpl), width: width, kind: kind})
		for range width {
			tmpl = append(tmpl, '0')
		}
	}
	need := []int{fieldYear, fieldMonth, fieldDay}
	switch unit {
	case KindHourly:
		need = append(need, fieldHour)
	case KindMonthly:
		need = need[:2]
	}
	for _, k := range need {
		if !l.has[k] {
			return nil
		}
	}
	l.template = string(tmpl)
	return l
}

// write returns t's key: the template with t's fields written in (as
// time.Format writes %Y, %m, %d, %H, %M and %S: zero-padded); ok is false
// for a year outside 0..9999, which Format writes otherwise.
func (l *digitLayout) write(t time.Time) (string, bool) {
	y, m, d := t.Date()
	if y < 0 || y > 9999 {
		return "", false
	}
	hh, mm, ss := t.Clock()
	v := [6]int{y, int(m), d, hh, mm, ss}
	var buf [32]byte
	b := append(buf[:0], l.template...)
	for _, f := range l.fields {
		n := v[f.kind]
		for j := f.at + f.width - 1; j >= f.at; j-- {
			b[j] = byte('0' + n%10)
			n /= 10
		}
	}
	return string(b), true
}

// read returns the fields of key (month and day 1, the others 0, when the
// format leaves them out); ok is false unless key fits the template and
// every field is in range (a day past its month's end is caught by
// digitIndex, which compares the date it makes with the fields).
func (l *digitLayout) read(key string) (v [6]int, ok bool) {
	if len(key) != len(l.template) {
		return v, false
	}
	v[fieldMonth], v[fieldDay] = 1, 1
	f := 0
	for i := 0; i < len(key); {
		if f < len(l.fields) && l.fields[f].at == i {
			n := 0
			for _, c := range []byte(key[i : i+l.fields[f].width]) {
				if c < '0' || c > '9' {
					return v, false
				}
				n = n*10 + int(c-'0')
			}
			v[l.fields[f].kind] = n
			i += l.fields[f].width
			f++
			continue
		}
		if key[i] != l.template[i] {
			return v, false
		}
		i++
	}
	if v[fieldMonth] < 1 || v[fieldMonth] > 12 || v[fieldDay] < 1 || v[fieldHour] > 23 || v[fieldMinute] > 59 || v[fieldSecond] > 59 {
		return v, false
	}
	return v, true
}

// digitIndex is WindowIndex of a key in the scheme's digit layout; ok is
// false unless key is a valid key of a window in the scheme's bounds.
func (s *timeScheme) digitIndex(key string) (int64, bool) {
	if s.digits == nil {
		return 0, false
	}
	v, ok := s.digits.read(key)
	if !ok {
		return 0, false
	}
	var i int64
	if s.unit == KindHourly {
		t := time.Date(v[fieldYear], time.Month(v[fieldMonth]), v[fieldDay], v[fieldHour], v[fieldMinute], v[fieldSecond], 0, s.loc)
		i = s.IndexAt(t)
		// A window's own key, and a local time that exists as written.
		y, m, d := t.Date()
		if t.Unix() != s.startUnix+i*3600 || y != v[fieldYear] || int(m) != v[fieldMonth] || d != v[fieldDay] || t.Hour() != v[fieldHour] {
			return 0, false
		}
	} else {
		y, m, d := v[fieldYear], time.Month(v[fieldMonth]), v[fieldDay]
		i = s.civilIndex(y, m, d)
		if cy, cm, cd := s.civil(i).Date(); cy != y || cm != m || cd != d {
			return 0, false // not the first day of its window, or no such day
		}
	}
	if i < 0 || s.hasEnd && i >= s.endIdx {
		return 0, false
	}
	return i, true
}
