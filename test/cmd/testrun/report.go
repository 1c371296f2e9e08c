package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
)

// missingTool starts the skip message of testenv.Tool and testenv.Missing
// (testenv.MissingTool; TestMissingToolPrefix keeps the two equal). The
// runner does not import testenv: that would compile half the module before
// its first line.
const missingTool = "missing tool: "

// event is one line of `go test -json` (cmd/test2json, and the build events
// of Go 1.24+).
type event struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string
	FailedBuild string
}

// pkgState is what the report keeps of a package until it finishes.
type pkgState struct {
	output  []string            // lines of the package itself (no test)
	tests   map[string][]string // each test's lines
	order   []string            // tests in the order they started
	ended   map[string]bool
	failed  []string
	pass    int
	fail    int
	skip    int
	started bool
}

// toolSkip is a test skipped for a missing tool.
type toolSkip struct {
	pkg, test, msg string
}

// report turns `go test -json` into the lines testrun prints. Its methods
// may be called from the reading loop and the heartbeat at once.
type report struct {
	mu     sync.Mutex
	w      io.Writer
	start  time.Time
	now    func() time.Time
	last   time.Time // when the last line was printed
	module string
	total  int
	done   int
	pkgs   map[string]*pkgState
	pass   int
	fail   int
	skip   int
	tools  []toolSkip
	broken []string // packages that did not build or ended without a result
}

func newReport(w io.Writer, start time.Time) *report {
	return &report{w: w, start: start, now: time.Now, last: start, pkgs: map[string]*pkgState{}}
}

// say prints a line and notes when.
func (r *report) say(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sayLocked(s)
}

func (r *report) sayLocked(s string) {
	fmt.Fprintln(r.w, s)
	r.last = r.now()
}

// begin records the module path (stripped from package names) and the
// number of packages.
func (r *report) begin(module string, total int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.module, r.total = module, total
}

// heartbeat prints a progress line whenever every passes without one, until
// the returned function is called (idempotent).
func (r *report) heartbeat(every time.Duration) (stop func()) {
	done := make(chan struct{})
	var once sync.Once
	go func() {
		t := time.NewTicker(every / 4)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				r.mu.Lock()
				if r.now().Sub(r.last) >= every {
					r.sayLocked(r.progressLocked())
				}
				r.mu.Unlock()
			}
		}
	}()
	return func() { once.Do(func() { close(done) }) }
}

// progressLocked says how far the run is.
func (r *report) progressLocked() string {
	el := r.now().Sub(r.start).Round(time.Second)
	if r.total == 0 {
		return fmt.Sprintf("test: %s, listing packages", el)
	}
	var running []string
	for p, s := range r.pkgs {
		if s.started {
			running = append(running, r.short(p))
		}
	}
	sort.Strings(running)
	msg := fmt.Sprintf("test: %s, %d of %d packages done", el, r.done, r.total)
	if len(running) > 0 {
		msg += ", testing " + strings.Join(running, " ")
	}
	if r.done+len(running) < r.total {
		msg += ", compiling the others"
	}
	return msg
}

// short is a package's path without the module's.
func (r *report) short(pkg string) string {
	if r.module != "" && strings.HasPrefix(pkg, r.module+"/") {
		return pkg[len(r.module)+1:]
	}
	if pkg == r.module && r.module != "" {
		return "."
	}
	return pkg
}

func (r *report) state(pkg string) *pkgState {
	s := r.pkgs[pkg]
	if s == nil {
		s = &pkgState{tests: map[string][]string{}, ended: map[string]bool{}}
		r.pkgs[pkg] = s
	}
	return s
}

// line takes one line of go test's standard output.
func (r *report) line(b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var e event
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &e) != nil {
		r.sayLocked(string(b))
		return
	}
	switch e.Action {
	case "build-output":
		r.sayLocked(strings.TrimSuffix(e.Output, "\n"))
		return
	case "build-fail":
		r.broken = append(r.broken, r.short(e.ImportPath))
		return
	}
	if e.Package == "" {
		return
	}
	s := r.state(e.Package)
	if e.Test == "" {
		r.packageEvent(e, s)
		return
	}
	switch e.Action {
	case "run":
		if _, ok := s.tests[e.Test]; !ok {
			s.tests[e.Test] = nil
			s.order = append(s.order, e.Test)
		}
	case "output":
		s.tests[e.Test] = append(s.tests[e.Test], e.Output)
	case "pass":
		s.pass++
		s.ended[e.Test] = true
	case "fail":
		s.fail++
		s.ended[e.Test] = true
		s.failed = append(s.failed, e.Test)
	case "skip":
		s.skip++
		s.ended[e.Test] = true
		for _, l := range s.tests[e.Test] {
			if _, msg, ok := strings.Cut(l, missingTool); ok {
				r.tools = append(r.tools, toolSkip{pkg: e.Package, test: e.Test, msg: strings.TrimSpace(msg)})
				break
			}
		}
	}
}

// packageEvent handles an event of the package itself; its end prints the
// package's line, and the output of what failed.
func (r *report) packageEvent(e event, s *pkgState) {
	switch e.Action {
	case "start":
		s.started = true
		return
	case "output":
		s.output = append(s.output, e.Output)
		return
	case "pass", "fail", "skip":
	default:
		return
	}
	r.done++
	r.pass += s.pass
	r.fail += s.fail
	r.skip += s.skip
	delete(r.pkgs, e.Package)
	name := r.short(e.Package)
	counts := fmt.Sprintf("[%d/%d]", r.done, r.total)
	switch {
	case e.Action == "skip" || (e.Action == "pass" && s.pass+s.fail+s.skip == 0):
		r.sayLocked(fmt.Sprintf("-    %-34s %7s  no tests %s", name, "", counts))
	case e.Action == "pass":
		r.sayLocked(fmt.Sprintf("ok   %-34s %6.1fs  %s %s", name, e.Elapsed, tally(s.pass, s.fail, s.skip), counts))
	default:
		for _, t := range s.failed {
			r.sayLocked(strings.TrimSuffix(strings.Join(s.tests[t], ""), "\n"))
		}
		// Tests that never ended: a panic, a timeout or os.Exit took the
		// binary down while they ran.
		for _, t := range s.order {
			if !s.ended[t] {
				r.sayLocked(strings.TrimSuffix(strings.Join(s.tests[t], ""), "\n"))
			}
		}
		r.sayLocked(strings.TrimSuffix(strings.Join(s.output, ""), "\n"))
		what := tally(s.pass, s.fail, s.skip)
		if e.FailedBuild != "" {
			what = "build failed: " + r.short(e.FailedBuild)
		} else if s.fail == 0 {
			r.broken = append(r.broken, name)
		}
		r.sayLocked(fmt.Sprintf("FAIL %-34s %6.1fs  %s %s", name, e.Elapsed, what, counts))
	}
}

func tally(pass, fail, skip int) string {
	s := fmt.Sprintf("%d passed", pass)
	if fail > 0 {
		s += fmt.Sprintf(", %d failed", fail)
	}
	if skip > 0 {
		s += fmt.Sprintf(", %d skipped", skip)
	}
	return s
}

// summary prints the tests skipped for a missing tool and the closing line,
// and returns 1 when something failed, or when ci and a tool was missing.
func (r *report) summary(ci bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	code := 0
	r.sayLocked(fmt.Sprintf("test: %d of %d packages in %s", r.done, r.total, r.now().Sub(r.start).Round(time.Second)))
	if len(r.broken) > 0 {
		sort.Strings(r.broken)
		r.sayLocked("did not build or ended without a result: " + strings.Join(r.broken, " "))
		code = 1
	}
	if r.fail > 0 {
		code = 1
	}
	if len(r.tools) == 0 {
		r.sayLocked("skipped for a missing tool: none")
	} else {
		sort.Slice(r.tools, func(i, j int) bool {
			a, b := r.tools[i], r.tools[j]
			if a.msg != b.msg {
				return a.msg < b.msg
			}
			if a.pkg != b.pkg {
				return a.pkg < b.pkg
			}
			return a.test < b.test
		})
		r.sayLocked(fmt.Sprintf("skipped for a missing tool (%d tests):", len(r.tools)))
		for i, s := range r.tools {
			if i == 0 || s.msg != r.tools[i-1].msg {
				r.sayLocked("  " + s.msg)
			}
			r.sayLocked(fmt.Sprintf("    %s %s", r.short(s.pkg), s.test))
		}
		if ci {
			r.sayLocked("CI is set: .ci/run must provide every tool, so no test may skip for one")
			code = 1
		}
	}
	r.sayLocked(fmt.Sprintf("test: %d passed, %d failed, %d skipped", r.pass, r.fail, r.skip))
	return code
}
