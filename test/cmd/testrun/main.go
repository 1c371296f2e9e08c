// Command testrun is `make test`: it runs `go test -json` over the module's
// packages and prints, as it goes, one line per package when it finishes, a
// line every 20 s while none does (what is running, how many are done: a cold
// build compiles for minutes), the output of every failed test and of every
// package that failed to build; last, every test skipped for a missing tool
// (testenv.Tool) with how to get that tool, and a closing line
// "test: N passed, N failed, N skipped".
//
//	go run ./test/cmd/testrun -exclude /test/e2e -- -count=1
//
// Flags after -- go to `go test` (before the packages). Its exit code is 1
// when a test or a build failed, or, in CI (CI set), when a test was skipped
// for a missing tool. It uses only the standard library, so `go run` builds
// it in seconds on a fresh machine and it speaks before anything else is
// compiled.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strings"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("testrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pattern := fs.String("pkgs", "./...", "the packages to test (a go list pattern)")
	exclude := fs.String("exclude", "", "leave out packages whose import path matches this regular expression")
	every := fs.Duration("heartbeat", 20*time.Second, "print a progress line after this long without one")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var skipRE *regexp.Regexp
	if *exclude != "" {
		re, err := regexp.Compile(*exclude)
		if err != nil {
			fmt.Fprintf(stderr, "testrun: -exclude: %v\n", err)
			return 2
		}
		skipRE = re
	}
	// ^C reaches go test too (same process group): let it stop, then report.
	signal.Ignore(os.Interrupt)

	r := newReport(stdout, time.Now())
	stop := r.heartbeat(*every)
	defer stop()

	r.say("test: listing packages (a fresh machine downloads modules first)")
	pkgs, module, err := list(*pattern, skipRE, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "testrun: %v\n", err)
		return 1
	}
	r.begin(module, len(pkgs))
	r.say(fmt.Sprintf("test: %d packages; one line each as it finishes", len(pkgs)))

	cmd := exec.Command("go", append(append([]string{"test", "-json"}, fs.Args()...), pkgs...)...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(stderr, "testrun: %v\n", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "testrun: go test: %v\n", err)
		return 1
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		r.line(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(stderr, "testrun: reading go test's output: %v\n", err)
		_, _ = io.Copy(io.Discard, out)
	}
	waitErr := cmd.Wait()
	stop()

	code := r.summary(os.Getenv("CI") != "")
	var exit *exec.ExitError
	switch {
	case waitErr == nil:
	case errors.As(waitErr, &exit):
		if code == 0 {
			code = 1
		}
	default:
		fmt.Fprintf(stderr, "testrun: go test: %v\n", waitErr)
		code = 1
	}
	return code
}

// list returns the import paths pattern matches, less those skip matches,
// and the main module's path.
func list(pattern string, skip *regexp.Regexp, stderr io.Writer) ([]string, string, error) {
	cmd := exec.Command("go", "list", "-e", "-f", "{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}", pattern)
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, "", fmt.Errorf("go list %s: %w", pattern, err)
	}
	var pkgs []string
	module := ""
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, mod, _ := strings.Cut(l, " ")
		if path == "" || (skip != nil && skip.MatchString(path)) {
			continue
		}
		if module == "" {
			module = mod
		}
		pkgs = append(pkgs, path)
	}
	if len(pkgs) == 0 {
		return nil, "", fmt.Errorf("go list %s: no package to test", pattern)
	}
	return pkgs, module, nil
}
