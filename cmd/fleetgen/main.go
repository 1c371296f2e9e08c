// Command fleetgen compiles fleet.yaml into the manifests Fleet, Verrazzano and
// Flux reconcile, mirrors every image they need and publishes the result.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/internal/memlimit"
	"fleetgen.dev/fleetgen/pkg/pipeline"
)

func main() {
	// Above 512 MiB live, the heap stays within 1.6 times what is live
	// (a fleet of 100,000 clusters); GOMEMLIMIT or GOGC overrides.
	memlimit.Start(os.Getenv)
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go stopOnSignal(sigs, cancel, os.Stderr, os.Exit)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	os.Exit(code)
}

// signalGrace is how long fleetgen waits after SIGINT or SIGTERM for the
// command to stop at its next cancellation point (exit 1, after cleaning up)
// before it exits anyway.
const signalGrace = time.Second

// stopOnSignal cancels the command's context on the first signal; on a second
// one, or when the command has not returned signalGrace later (it may wait on
// something that does not watch the context: a file, a network peer, a
// library), it exits at once with 128 + the signal's number (130 for SIGINT,
// 143 for SIGTERM), as a shell reports a process killed by it. Writes are
// atomic (a journal and renames), so stopping anywhere leaves the old output
// or the new.
func stopOnSignal(sigs <-chan os.Signal, cancel func(), stderr io.Writer, exit func(int)) {
	first := <-sigs
	cancel()
	select {
	case <-sigs:
	case <-time.After(signalGrace):
	}
	code := exitFailure
	if s, ok := first.(syscall.Signal); ok {
		code = 128 + int(s)
	}
	fmt.Fprintf(stderr, "error: stopped by %v\n", first)
	exit(code)
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
//
// A panic is a bug, not the input's fault: it is exit 1 (the Go runtime would
// exit 2, the code of invalid input), with the stack, which holds no values.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "error: internal error (a bug in fleetgen, please report it with this stack):\n%s", debug.Stack())
			code = exitFailure
		}
	}()
	// Helm's engine warns through the standard log and slog's default
	// logger, naming keys of a chart's values: nothing a chart says reaches
	// a terminal or a CI log raw. fleetgen's own logs go to g.logger.
	log.SetOutput(io.Discard)
	g := &globals{errFormat: formatText}
	root := newRoot(g, stdin, stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	path := root.CommandPath()
	if cmd != nil {
		path = cmd.CommandPath()
	}
	return report(stdout, stderr, g.errFormat, path, err)
}

// globals are the flags every command shares.
type globals struct {
	logFormat string
	verbose   bool
	quiet     bool
	errFormat string // text, json or github: how input problems are printed
	// ageKeyFile checks sealed Secrets by decrypting them (pipeline.Config.AgeKeyFile).
	ageKeyFile string
	logger     *slog.Logger
	progress   io.Writer
	envPrefix  string
}

func newRoot(g *globals, stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
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
			warnDeprecated(cmd, stderr)
			return g.setup(stderr)
		},
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &usageError{fmt.Errorf("%s: %w", cmd.CommandPath(), err)}
	})
	pf := root.PersistentFlags()
	pf.StringVar(&g.logFormat, "log-format", "text", "log format on stderr: text or json")
	pf.BoolVarP(&g.verbose, "verbose", "v", false, "log debug details")
	pf.BoolVarP(&g.quiet, "quiet", "q", false, "log only errors")
	pf.StringVar(&g.envPrefix, "kubeconfig-env-prefix", "", "also let {env: VAR} read variables whose names start with this (always: FLEETGEN_KUBECONFIG_)")
	_ = root.RegisterFlagCompletionFunc("log-format", completeValues("text", "json"))
	pf.StringVar(&g.ageKeyFile, "age-key-file", "", "age identities with which render, check and publish decrypt and check the sealed Secrets of the output folder (default $SOPS_AGE_KEY_FILE)")

	root.AddCommand(
		newValidate(g),
		newImages(g, stdout),
		newMirror(g, stdout),
		newRender(g, stdout),
		newDiff(g, stdout),
		newPublish(g, stdout),
		newBuild(g),
		newTargets(g, stdout),
		newVerify(g, stdout),
		newVersion(stdout),
		newCompletion(stdout),
		newSchema(stdout),
		newExplain(stdout),
		newInit(stdout, stderr),
	)
	return root
}

// setup checks the global flags and builds the logger.
func (g *globals) setup(stderr io.Writer) error {
	level := slog.LevelInfo
	switch g.errFormat {
	case formatText, formatJSON, formatGitHub:
	default:
		return usagef("invalid format %q: want text, json or github", g.errFormat)
	}
	switch {
	case g.verbose && g.quiet:
		return usagef("--verbose and --quiet exclude each other")
	case g.verbose:
		level = slog.LevelDebug
	case g.quiet:
		level = slog.LevelError
	}
	// Logs may name what fleet.yaml or DIR holds (paths, names): every
	// string is written inert, so no log line starts a workflow command.
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: inertAttr}
	switch g.logFormat {
	case "text":
		// Short lines for people: no timestamp (the terminal or CI log has one).
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return inertAttr(groups, a)
		}
		g.logger = slog.New(slog.NewTextHandler(stderr, opts))
	case "json":
		g.logger = slog.New(slog.NewJSONHandler(stderr, opts))
	default:
		return usagef("invalid --log-format %q: want text or json", g.logFormat)
	}
	// Live on a terminal, one line per image otherwise (mirrorProgress).
	if !g.quiet {
		g.progress = stderr
	}
	return nil
}

// inertAttr writes a log attribute's strings (a string, an error, a list of
// strings) with inert.Text.
func inertAttr(_ []string, a slog.Attr) slog.Attr {
	switch a.Value.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(inert.Text(a.Value.String()))
	case slog.KindAny:
		switch v := a.Value.Any().(type) {
		case error:
			a.Value = slog.StringValue(inert.Prose(v.Error()))
		case []string:
			out := make([]string, len(v))
			for i, s := range v {
				out[i] = inert.Text(s)
			}
			a.Value = slog.AnyValue(out)
		case fmt.Stringer:
			a.Value = slog.StringValue(inert.Text(v.String()))
		}
	}
	return a
}

// configFor is the pipeline.Config every command that reads fleet.yaml
// starts from: the fleet file from -f or the argument (fleetFile), and the
// input flags the command takes.
func (g *globals) configFor(cmd *cobra.Command, in *input, args []string) (pipeline.Config, error) {
	f, err := fleetFile(cmd, in.file, args)
	if err != nil {
		return pipeline.Config{}, err
	}
	return pipeline.Config{File: f, Logger: g.logger, KubeconfigEnvPrefix: g.envPrefix, AgeKeyFile: g.ageKeyFile,
		AllowPlaintextSecrets: in.allowPlaintext, Locked: in.locked, FetchCharts: in.fetchCharts, Rebalance: in.rebalance}, nil
}

// input holds the flags of a command that reads fleet.yaml, declared once for
// every command by input.add: -f (or [PATH]) and, where the command takes
// them, --allow-plaintext-secrets, --locked and --rebalance. The environment prefix
// (--kubeconfig-env-prefix) and --age-key-file are global flags.
type input struct {
	file           string
	allowPlaintext bool
	locked         bool
	fetchCharts    string
	rebalance      bool
}

// inputFlags chooses the optional input flags of a command.
type inputFlags uint8

const (
	// withPlaintext: --allow-plaintext-secrets (commands that render Secrets).
	withPlaintext inputFlags = 1 << iota
	// withLocked: --locked (commands that would change the lock by rendering).
	withLocked
	// withRebalance: --rebalance (commands that assign shards by rendering).
	withRebalance
)

// add declares in's flags on cmd: -f and the optional [PATH] argument (see
// fleetFile), --error-format, and those of which.
func (in *input) add(g *globals, cmd *cobra.Command, which inputFlags) {
	addFile(g, cmd, &in.file)
	cmd.Flags().StringVar(&in.fetchCharts, "fetch-charts", "", "fetch a chart the chart cache lacks from the mirror at this registry host (it must be spec.registry.host), by its locked digest, read-only (docs/ci.md)")
	if which&withPlaintext != 0 {
		cmd.Flags().BoolVar(&in.allowPlaintext, "allow-plaintext-secrets", false, "accept Secrets that hold credentials in plaintext when spec.encryption is not set (render writes them unencrypted)")
	}
	if which&withLocked != 0 {
		cmd.Flags().BoolVar(&in.locked, "locked", false, "fail (exit 2, nothing written) when fleet.lock.yaml would change: a new clientID, shard assignment or image")
	}
	if which&withRebalance != 0 {
		cmd.Flags().BoolVar(&in.rebalance, "rebalance", false, "reassign shards on purpose: those the lock puts on a shard spec.shards no longer declares, and only them; when there are none, the fewest unpinned clusters that balance the shards")
	}
}

// wrap marks an error from a command's work so that report does not take it
// for a usage error.
func wrap(err error) error {
	if err == nil {
		return nil
	}
	return &runError{err: err}
}

// addFile adds -f and the optional [PATH] argument (see fleetFile), and
// --error-format, to a command that reads fleet.yaml.
func addFile(g *globals, cmd *cobra.Command, file *string) {
	cmd.Flags().StringVarP(file, "file", "f", pipeline.DefaultFile, "path of fleet.yaml, or its folder")
	cmd.Args = fleetArgs
	cmd.ValidArgsFunction = completeFleetFile
	_ = cmd.MarkFlagFilename("file", "yaml", "yml")
	if cmd.Flags().Lookup("error-format") == nil {
		cmd.Flags().StringVar(&g.errFormat, "error-format", formatText, "how input problems are printed: text (stderr), json or github (stdout)")
		_ = cmd.RegisterFlagCompletionFunc("error-format", completeValues(formatText, formatJSON, formatGitHub))
	}
}

func example(lines ...string) string {
	return "  " + strings.Join(lines, "\n  ")
}
