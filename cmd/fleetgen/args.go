package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"fleetgen.dev/fleetgen/pkg/pipeline"
	"fleetgen.dev/fleetgen/pkg/problem"
)

// usageError is a mistake on the command line: exit 2 and a pointer to the
// command's help, as kubectl and flux do.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// fleetArgs accepts the fleet file (or its folder) as one optional argument.
var fleetArgs = func(cmd *cobra.Command, args []string) error {
	if err := cobra.MaximumNArgs(1)(cmd, args); err != nil {
		return &usageError{fmt.Errorf("%s: %w: want at most the fleet file or its folder", cmd.CommandPath(), err)}
	}
	return nil
}

// fleetFile returns the fleet file a command reads: the positional argument or
// -f (both given must name the same file), a folder standing for its
// fleet.yaml. A file that does not exist is left for the command to report
// (an input error naming where the name came from); a folder without
// fleet.yaml is a usage error.
func fleetFile(cmd *cobra.Command, flagValue string, args []string) (string, error) {
	f, err := resolveFleetFile(cmd, flagValue, args)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(f); errors.Is(err, fs.ErrNotExist) {
		// An input error (exit 2, in the --error-format), saying where the
		// name came from rather than asking for -f.
		var msg string
		switch {
		case len(args) == 1:
			msg = fmt.Sprintf("%s: no such file (the argument): want an existing fleet file or the folder that holds it", f)
		case cmd.Flags().Changed("file"):
			msg = fmt.Sprintf("%s: no such file (-f): want an existing fleet file or the folder that holds it", f)
		default:
			msg = fmt.Sprintf("%s: no such file in the current folder: run fleetgen in the fleet's folder, or give its fleet file (or folder) with -f or as the argument", f)
		}
		return "", &runError{problem.Invalid(errors.New(msg))}
	}
	return f, nil
}

func resolveFleetFile(cmd *cobra.Command, flagValue string, args []string) (string, error) {
	file := flagValue
	if len(args) == 1 {
		arg, err := inFolder(cmd, args[0], "argument")
		if err != nil {
			return "", err
		}
		if cmd.Flags().Changed("file") {
			f, err := inFolder(cmd, flagValue, "-f")
			if err != nil {
				return "", err
			}
			if filepath.Clean(f) != filepath.Clean(arg) {
				return "", usagef("%s: -f %s and argument %s name different fleet files: give one of them", cmd.CommandPath(), flagValue, args[0])
			}
		}
		return arg, nil
	}
	return inFolder(cmd, file, "-f")
}

// inFolder turns a folder into its fleet.yaml.
func inFolder(cmd *cobra.Command, p, what string) (string, error) {
	// The argument of render, publish and build is the fleet, not DIR.
	hint := ""
	if o := cmd.Flags().Lookup("output-dir"); what == "argument" && o != nil {
		hint = " (the output folder is -o DIR)"
	}
	st, err := os.Stat(p)
	switch {
	case err != nil && hint != "":
		return "", usagef("%s: argument %s: no such fleet file or folder%s", cmd.CommandPath(), p, hint)
	case err != nil || !st.IsDir():
		return p, nil
	}
	f := filepath.Join(p, pipeline.DefaultFile)
	if _, err := os.Stat(f); err != nil {
		return "", usagef("%s: %s %s is a folder without %s: want the fleet file or its folder%s", cmd.CommandPath(), what, p, pipeline.DefaultFile, hint)
	}
	return f, nil
}
