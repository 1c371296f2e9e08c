// Package sprigbound holds Sprig's template functions whose output size the
// template chooses (repeat, until, untilStep, seq), as Sprig v3.3 defines
// them but bounded: a template from a pull request (a chart, an
// ApplicationSet) could ask for any size, and Sprig sets no bound. pkg/charts
// and pkg/appset add them over Sprig's own, each with its bounds.
package sprigbound

import (
	"errors"
	"fmt"
	"strings"
	"text/template"
)

// ErrTooLarge is what a function returns (wrapped) when asked for more than
// its bound.
var ErrTooLarge = errors.New("more than the bound allows")

// Funcs returns repeat, until, untilStep and seq, refusing (ErrTooLarge)
// more than items numbers or a repeat of more than bytes bytes.
func Funcs(items, bytes int) template.FuncMap {
	b := bounds{items: items, bytes: bytes}
	return template.FuncMap{
		"repeat": func(count int, s string) (string, error) {
			if count < 0 || int64(count)*int64(len(s)) > int64(b.bytes) {
				return "", fmt.Errorf("repeat of %d times %d bytes, more than %d bytes: %w", count, len(s), b.bytes, ErrTooLarge)
			}
			return strings.Repeat(s, count), nil
		},
		"until": func(count int) ([]int, error) {
			step := 1
			if count < 0 {
				step = -1
			}
			v, err := b.untilStep(0, count, step)
			if err != nil {
				return nil, fmt.Errorf("until making more than %d numbers: %w", b.items, ErrTooLarge)
			}
			return v, nil
		},
		"untilStep": b.untilStep,
		"seq":       b.seq,
	}
}

type bounds struct{ items, bytes int }

// untilStep is Sprig's untilStep, refusing more than b.items numbers.
func (b bounds) untilStep(start, stop, step int) ([]int, error) {
	v := []int{}
	switch {
	case stop < start && step < 0:
		if (start-stop)/(-step) > b.items {
			return nil, fmt.Errorf("untilStep making more than %d numbers: %w", b.items, ErrTooLarge)
		}
		for i := start; i > stop; i += step {
			v = append(v, i)
		}
	case stop >= start && step > 0:
		if (stop-start)/step > b.items {
			return nil, fmt.Errorf("untilStep making more than %d numbers: %w", b.items, ErrTooLarge)
		}
		for i := start; i < stop; i += step {
			v = append(v, i)
		}
	}
	return v, nil
}

// seq is Sprig's seq (like the seq command), refusing more than b.items
// numbers.
func (b bounds) seq(params ...int) (string, error) {
	var start, end, step int
	switch len(params) {
	case 1:
		start, end, step = 1, params[0], 1
		if end < start {
			step = -1
		}
	case 2:
		start, end, step = params[0], params[1], 1
		if end < start {
			step = -1
		}
	case 3:
		start, step, end = params[0], params[1], params[2]
		if end < start && step > 0 {
			return "", nil
		}
	default:
		return "", nil
	}
	inc := 1
	if end < start {
		inc = -1
	}
	v, err := b.untilStep(start, end+inc, step)
	if err != nil {
		return "", fmt.Errorf("seq making more than %d numbers: %w", b.items, ErrTooLarge)
	}
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, " "), nil
}
