package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/test/testenv"
)

// TestSignalStopsABlockedCommand builds fleetgen, starts a render that blocks
// reading a FIFO (here the age key file, trusted configuration, read as a
// plain file) and sends SIGTERM, or SIGINT twice: fleetgen must exit within
// about two seconds with 128 + the signal (issue 20, item 3). It used to
// cancel a context nobody was waiting on and block forever.
func TestSignalStopsABlockedCommand(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "fleetgen")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name    string
		signals []syscall.Signal
		want    int
		within  time.Duration
	}{
		{"SIGTERM", []syscall.Signal{syscall.SIGTERM}, 143, 2 * time.Second},
		// A second SIGINT exits at once (TestSecondSignalExitsAtOnce holds
		// that without a process); here only the exit code and message, with
		// room for a loaded machine (it once took 1.08 s at load average 7).
		{"SIGINT twice", []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, 130, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := testenv.CopyTree(t, "../../examples/quickstart")
			fifo := filepath.Join(dir, "key.fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "render", "-q", "-f", filepath.Join(dir, "fleet.yaml"), "-o", filepath.Join(dir, "out"), "--age-key-file", fifo)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			time.Sleep(500 * time.Millisecond) // let it reach the FIFO
			start := time.Now()
			for _, s := range tc.signals {
				if err := cmd.Process.Signal(s); err != nil {
					t.Fatal(err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			select {
			case err := <-done:
				if d := time.Since(start); d > tc.within {
					t.Errorf("exited %v after the signal, want within %v", d, tc.within)
				}
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != tc.want {
					t.Errorf("exit: %v, want code %d\n%s", err, tc.want, stderr.String())
				}
				if !strings.Contains(stderr.String(), "error: stopped by") {
					t.Errorf("stderr does not say why:\n%s", stderr.String())
				}
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				t.Fatal("fleetgen still running 10 s after the signal")
			}
		})
	}
}

// TestSecondSignalExitsAtOnce: stopOnSignal cancels on the first signal and
// exits on the second without waiting for signalGrace, with 128 + the first
// signal's number and a message; on one signal it exits after the grace.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		signals  []os.Signal
		min, max time.Duration
		want     int
	}{
		"twice": {[]os.Signal{syscall.SIGINT, syscall.SIGINT}, 0, signalGrace / 2, 130},
		"once":  {[]os.Signal{syscall.SIGTERM}, signalGrace, 10 * signalGrace, 143},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sigs := make(chan os.Signal, 2)
			cancelled := make(chan struct{})
			exited := make(chan int, 1)
			var stderr bytes.Buffer
			start := time.Now()
			for _, s := range tc.signals {
				sigs <- s
			}
			go stopOnSignal(sigs, func() { close(cancelled) }, &stderr, func(code int) { exited <- code })
			code := <-exited
			d := time.Since(start)
			<-cancelled
			if code != tc.want || d < tc.min || d > tc.max {
				t.Errorf("exit %d after %v, want %d within [%v, %v]", code, d, tc.want, tc.min, tc.max)
			}
			if !strings.Contains(stderr.String(), "error: stopped by") {
				t.Errorf("stderr = %q", stderr.String())
			}
		})
	}
}

// TestExitCodes: input errors are 2, everything else 1, also when a step
// wrapped a failure of the machine in an input error (issue 20, item 8).
func TestExitCodes(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		err  error
		want int
	}{
		"input":                  {&runError{problem.Invalid(errors.New("bad"))}, exitInvalid},
		"field":                  {&runError{problem.Errors{problem.Other("", "bad")}}, exitInvalid},
		"runtime":                {&runError{errors.New("registry down")}, exitFailure},
		"I/O error inside input": {&runError{problem.Invalid(fmt.Errorf("read x: %w", syscall.EIO))}, exitFailure},
		"disk full inside input": {&runError{problem.Invalid(fmt.Errorf("write x: %w", syscall.ENOSPC))}, exitFailure},
		"cancelled inside input": {&runError{problem.Invalid(fmt.Errorf("layer: %w", context.Canceled))}, exitFailure},
		"usage":                  {usagef("bad flag"), exitInvalid},
		"drift":                  {&runError{errDrift}, exitDrift},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			if got := report(&out, &errb, formatText, "fleetgen render", tc.err); got != tc.want {
				t.Errorf("report = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestPanicIsExit1: a bug is exit 1, not the Go runtime's 2 (which is the
// code of invalid input). Writing the version to a nil stdout panics.
func TestPanicIsExit1(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	if got := run(context.Background(), []string{"version"}, nil, nil, &stderr); got != exitFailure {
		t.Fatalf("run = %d, want %d\n%s", got, exitFailure, stderr.String())
	}
	if !strings.Contains(stderr.String(), "internal error") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}
