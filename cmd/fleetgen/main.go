// Command fleetgen compiles fleet.yaml into the manifests Fleet, Verrazzano and
// Flux reconcile, mirrors every image they need and publishes the result.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"fleetgen.dev/fleetgen/pkg/pipeline"
	"fleetgen.dev/fleetgen/pkg/schema"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes (SPEC §2).
const (
	exitOK      = 0
	exitFailure = 1 // registry, Git, file system
	exitInvalid = 2 // invalid input or usage
	exitDrift   = 3 // render --check found differences
)

// errDrift is returned by render --check after it printed the diff.
var errDrift = errors.New("output is out of date: run `fleetgen render` without --check")

// runError marks an error returned by a command's own work, as opposed to one
// cobra returned while parsing the command line (a usage error).
type runError struct{ err error }

func (e *runError) Error() string { return e.err.Error() }
func (e *runError) Unwrap() error { return e.err }

// run is the whole CLI; tests call it in-process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	return report(stderr, err)
}

// report prints err as `error: …` on stderr and returns its exit code. This is
// the only place that turns errors into exit codes.
func report(stderr io.Writer, err error) int {
	var re *runError
	code := exitFailure
	switch {
	case errors.Is(err, errDrift):
		code = exitDrift
	case !errors.As(err, &re):
		// cobra's own errors: unknown command or flag, missing -o, bad value.
		code = exitInvalid
	case schema.IsInvalid(err):
		code = exitInvalid
	}
	var es schema.Errors
	if errors.As(err, &es) && es.Error() == err.Error() && len(es) > 1 {
		fmt.Fprintf(stderr, "error: %d problems:\n", len(es))
		for _, e := range es {
			fmt.Fprintf(stderr, "  %s\n", e.Error())
		}
	} else {
		fmt.Fprintf(stderr, "error: %s\n", err)
	}
	if code == exitInvalid && !errors.As(err, &re) {
		fmt.Fprintln(stderr, "Run 'fleetgen --help' for usage.")
	}
	return code
}

// globals are the flags every command shares.
type globals struct {
	logFormat string
	verbose   bool
	quiet     bool
	// ageKeyFile verifies sealed Secrets by decrypting them (pipeline.Config.AgeKeyFile).
	ageKeyFile string
	logger     *slog.Logger
	progress   io.Writer
}

func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "fleetgen",
		Short: "Compile fleet.yaml into Fleet, Verrazzano and Flux manifests",
		Long: `fleetgen compiles one declarative fleet.yaml into the manifests that Rancher
Fleet, Verrazzano and Flux reconcile, mirrors every image they need into a
private registry, pins them by digest, and publishes the rendered tree to Git
or to an OCI repository that Flux reads.

Logs go to stderr; machine output (image lists, diffs) to stdout.
Exit codes: 0 ok, 1 runtime failure, 2 invalid input or usage, 3 drift (render --check).`,
		Example: `  # Check fleet.yaml and everything it refers to
  fleetgen validate -f fleet.yaml

  # Write the manifests to out/, then verify in CI that they are up to date
  fleetgen render -f fleet.yaml -o out
  fleetgen render -f fleet.yaml -o out --check

  # Mirror images, render and publish in one go
  fleetgen build -f fleet.yaml -o out --publish`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return g.setup(stderr)
		},
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	})
	pf := root.PersistentFlags()
	pf.StringVar(&g.logFormat, "log-format", "text", "log format on stderr: text or json")
	pf.BoolVarP(&g.verbose, "verbose", "v", false, "log debug details")
	pf.BoolVarP(&g.quiet, "quiet", "q", false, "log only errors")
	pf.StringVar(&g.ageKeyFile, "age-key-file", "", "age identities with which render, check and publish decrypt and verify the sealed Secrets of the output folder (default $SOPS_AGE_KEY_FILE)")

	root.AddCommand(
		newValidate(g),
		newImages(g, stdout),
		newMirror(g, stdout),
		newRender(g, stdout),
		newPublish(g),
		newBuild(g),
		newVersion(stdout),
	)
	return root
}

// setup checks the global flags and builds the logger.
func (g *globals) setup(stderr io.Writer) error {
	level := slog.LevelInfo
	switch {
	case g.verbose && g.quiet:
		return errors.New("--verbose and --quiet exclude each other")
	case g.verbose:
		level = slog.LevelDebug
	case g.quiet:
		level = slog.LevelError
	}
	opts := &slog.HandlerOptions{Level: level}
	switch g.logFormat {
	case "text":
		// Short lines for people: no timestamp (the terminal or CI log has one).
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}
		g.logger = slog.New(slog.NewTextHandler(stderr, opts))
	case "json":
		g.logger = slog.New(slog.NewJSONHandler(stderr, opts))
	default:
		return fmt.Errorf("invalid --log-format %q: want text or json", g.logFormat)
	}
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) && !g.quiet {
		g.progress = stderr
	}
	return nil
}

// config is the pipeline.Config every command starts from.
func (g *globals) config(file string) pipeline.Config {
	return pipeline.Config{File: file, Logger: g.logger, Progress: g.progress, AgeKeyFile: g.ageKeyFile}
}

// wrap marks an error from a command's work so that report does not take it
// for a usage error.
func wrap(err error) error {
	if err == nil {
		return nil
	}
	return &runError{err: err}
}

func addFile(cmd *cobra.Command, file *string) {
	cmd.Flags().StringVarP(file, "file", "f", pipeline.DefaultFile, "path of fleet.yaml")
}

func addOutput(cmd *cobra.Command, out *string) {
	cmd.Flags().StringVarP(out, "output", "o", "", "output folder of the rendered tree (required)")
	_ = cmd.MarkFlagRequired("output")
}

func example(lines ...string) string {
	return "  " + strings.Join(lines, "\n  ")
}
