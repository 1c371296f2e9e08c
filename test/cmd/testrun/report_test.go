package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"fleetgen.dev/fleetgen/test/testenv"
)

// TestMissingToolPrefix: the runner recognises testenv's skip message.
func TestMissingToolPrefix(t *testing.T) {
	if testenv.MissingTool != missingTool {
		t.Fatalf("testenv.MissingTool %q, the runner looks for %q", testenv.MissingTool, missingTool)
	}
}

// stream is a `go test -json` run of four packages: one passes with a test
// skipped for a missing tool, one has a failed test, one does not build, one
// has no test files; two tests of other packages skip for the same tool and
// for another.
var stream = []event{
	{Action: "start", Package: "m/pkg/a"},
	{Action: "start", Package: "m/pkg/b"},
	{Action: "run", Package: "m/pkg/a", Test: "TestA"},
	{Action: "output", Package: "m/pkg/a", Test: "TestA", Output: "=== RUN   TestA\n"},
	{Action: "pass", Package: "m/pkg/a", Test: "TestA"},
	{Action: "run", Package: "m/pkg/a", Test: "TestCosign"},
	{Action: "output", Package: "m/pkg/a", Test: "TestCosign", Output: "=== RUN   TestCosign\n"},
	{Action: "output", Package: "m/pkg/a", Test: "TestCosign", Output: "    a_test.go:9: missing tool: cosign; get it: build.sh cosign\n"},
	{Action: "output", Package: "m/pkg/a", Test: "TestCosign", Output: "--- SKIP: TestCosign (0.00s)\n"},
	{Action: "skip", Package: "m/pkg/a", Test: "TestCosign"},
	{Action: "run", Package: "m/pkg/b", Test: "TestB"},
	{Action: "output", Package: "m/pkg/b", Test: "TestB", Output: "=== RUN   TestB\n"},
	{Action: "output", Package: "m/pkg/b", Test: "TestB", Output: "    b_test.go:4: want 1, got 2\n"},
	{Action: "output", Package: "m/pkg/b", Test: "TestB", Output: "--- FAIL: TestB (0.00s)\n"},
	{Action: "fail", Package: "m/pkg/b", Test: "TestB"},
	{Action: "run", Package: "m/pkg/b", Test: "TestSkip"},
	{Action: "output", Package: "m/pkg/b", Test: "TestSkip", Output: "    b_test.go:9: -short\n"},
	{Action: "skip", Package: "m/pkg/b", Test: "TestSkip"},
	{Action: "run", Package: "m/pkg/b", Test: "TestHelm/sub"},
	{Action: "output", Package: "m/pkg/b", Test: "TestHelm/sub", Output: "    b_test.go:20: missing tool: helm; get it: build.sh helm\n"},
	{Action: "skip", Package: "m/pkg/b", Test: "TestHelm/sub"},
	{Action: "output", Package: "m/pkg/b", Output: "FAIL\n"},
	{Action: "fail", Package: "m/pkg/b", Elapsed: 0.5},
	{Action: "output", Package: "m/pkg/a", Output: "PASS\n"},
	{Action: "pass", Package: "m/pkg/a", Elapsed: 1.25},
	{Action: "build-output", ImportPath: "m/pkg/c [m/pkg/c.test]", Output: "# m/pkg/c\n"},
	{Action: "build-output", ImportPath: "m/pkg/c [m/pkg/c.test]", Output: "pkg/c/c.go:3:1: syntax error\n"},
	{Action: "build-fail", ImportPath: "m/pkg/c [m/pkg/c.test]"},
	{Action: "start", Package: "m/pkg/c"},
	{Action: "output", Package: "m/pkg/c", Output: "FAIL\tm/pkg/c [build failed]\n"},
	{Action: "fail", Package: "m/pkg/c", FailedBuild: "m/pkg/c [m/pkg/c.test]"},
	{Action: "start", Package: "m/pkg/d"},
	{Action: "output", Package: "m/pkg/d", Output: "?   \tm/pkg/d\t[no test files]\n"},
	{Action: "skip", Package: "m/pkg/d"},
	{Action: "start", Package: "m/pkg/e"},
	{Action: "run", Package: "m/pkg/e", Test: "TestCosign2"},
	{Action: "output", Package: "m/pkg/e", Test: "TestCosign2", Output: "    e_test.go:9: missing tool: cosign; get it: build.sh cosign\n"},
	{Action: "skip", Package: "m/pkg/e", Test: "TestCosign2"},
	{Action: "pass", Package: "m/pkg/e", Elapsed: 0.01},
}

const want = `=== RUN   TestB
    b_test.go:4: want 1, got 2
--- FAIL: TestB (0.00s)
FAIL
FAIL pkg/b                                 0.5s  0 passed, 1 failed, 2 skipped [1/5]
ok   pkg/a                                 1.2s  1 passed, 1 skipped [2/5]
# m/pkg/c
pkg/c/c.go:3:1: syntax error
FAIL	m/pkg/c [build failed]
FAIL pkg/c                                 0.0s  build failed: pkg/c [m/pkg/c.test] [3/5]
-    pkg/d                                       no tests [4/5]
ok   pkg/e                                 0.0s  0 passed, 1 skipped [5/5]
test: 5 of 5 packages in 0s
did not build or ended without a result: pkg/c [m/pkg/c.test]
skipped for a missing tool (3 tests):
  cosign; get it: build.sh cosign
    pkg/a TestCosign
    pkg/e TestCosign2
  helm; get it: build.sh helm
    pkg/b TestHelm/sub
test: 1 passed, 1 failed, 4 skipped
`

// TestReport: package lines in the order packages finish, the output of
// what failed, the missing tools grouped with their tests, the closing line
// CI's runner reads; exit 1 for the failures.
func TestReport(t *testing.T) {
	var out bytes.Buffer
	start := time.Unix(0, 0)
	r := newReport(&out, start)
	r.now = func() time.Time { return start }
	r.begin("m", 5)
	for _, e := range stream {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		r.line(b)
	}
	if code := r.summary(false); code != 1 {
		t.Errorf("exit code %d, want 1 (a test failed)", code)
	}
	if out.String() != want {
		t.Errorf("report:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestReportCI: in CI a test skipped for a missing tool fails the run even
// when every test passed; without one, the summary says none.
func TestReportCI(t *testing.T) {
	for _, tc := range []struct {
		name     string
		events   []event
		wantCode int
		wantLine string
	}{
		{"tool skipped", stream[:10], 1, "CI is set: .ci/run must provide every tool"},
		{"no tool skipped", stream[2:5], 0, "skipped for a missing tool: none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			r := newReport(&out, time.Now())
			r.begin("m", 1)
			for _, e := range tc.events {
				b, _ := json.Marshal(e)
				r.line(b)
			}
			if code := r.summary(true); code != tc.wantCode {
				t.Errorf("exit code %d, want %d:\n%s", code, tc.wantCode, out.String())
			}
			if !strings.Contains(out.String(), tc.wantLine) {
				t.Errorf("report lacks %q:\n%s", tc.wantLine, out.String())
			}
		})
	}
}

// TestHeartbeat: with nothing printed for the interval, a line says how
// many packages are done and which are being tested.
func TestHeartbeat(t *testing.T) {
	var out syncBuffer
	r := newReport(&out, time.Now().Add(-time.Minute))
	r.last = time.Now().Add(-time.Minute)
	r.begin("m", 3)
	b, _ := json.Marshal(event{Action: "start", Package: "m/pkg/a"})
	r.line(b)
	r.last = time.Now().Add(-time.Minute)
	stop := r.heartbeat(40 * time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "0 of 3 packages done, testing pkg/a, compiling the others") {
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("no heartbeat line:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	stop()
}

// syncBuffer is a bytes.Buffer the heartbeat may write while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
