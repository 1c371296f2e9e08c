// Command rundoc runs the shell blocks of a Markdown page of fleetgen's
// documentation as written, in order, in one bash, starting in a fresh clone
// of the repository in a scratch folder (test/doctest: the same sandbox the
// tests run them in), and removes the folder after.
//
//	go run ./test/cmd/rundoc docs/try-locally.md
//	go run ./test/cmd/rundoc -keep docs/try-locally.md   # keep the folder, print its path
//
// Run it from the repository's root (the clone takes its files as they are
// now, uncommitted changes included).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"fleetgen.dev/fleetgen/test/doctest"
)

func main() {
	keep := flag.Bool("keep", false, "keep the scratch folder")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./test/cmd/rundoc [-keep] FILE.md")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, flag.Arg(0), *keep); err != nil {
		fmt.Fprintln(os.Stderr, "rundoc:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, page string, keep bool) error {
	blocks, err := doctest.ParseFile(page)
	if err != nil {
		return err
	}
	repo, err := os.Getwd()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "rundoc-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Fprintln(os.Stderr, "rundoc: the scratch folder is", work)
	} else {
		defer os.RemoveAll(work)
	}
	s, err := doctest.NewSandbox(work)
	if err != nil {
		return err
	}
	s.Dir = filepath.Join(work, "fleetgen")
	if err := doctest.Clone(repo, s.Dir); err != nil {
		return err
	}
	_, err = s.Run(ctx, doctest.Script(blocks), os.Stdout)
	return err
}
