package main

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
)

// parallel runs fn(0..n-1), at most jobs at a time, and returns every error.
func parallel(jobs, n int, fn func(int) error) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	sem := make(chan struct{}, jobs)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// settle writes back what earlier runs left dirty in the page cache, so that
// a run does not pay for another's writes (each writes 680 MiB into a fresh
// registry; the first cold run after the floor took twice as long as the
// same run later in one measurement on a loaded machine).
func settle() { syscall.Sync() }

func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
