package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/secrets"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"fleetgen": func() {
			os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		},
	})
}

// TestScript runs cmd/fleetgen/testdata/script/*.txtar against the real CLI,
// in-process.
//
// Conditions [generate], [schema], [positions] and [secrets] report whether the work of
// the other issues is present (the packages were built in parallel); scripts
// that need it skip without it.
func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"status": status,
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "generate":
				return generateImplemented(), nil
			case "schema":
				return validateImplemented(), nil
			case "positions":
				return positionsImplemented(), nil
			case "secrets":
				return scanImplemented(), nil
			}
			return false, nil
		},
	})
}

// minimal is a fleet with one capi cluster.
func minimal() *schema.Fleet {
	f := &schema.Fleet{
		APIVersion: schema.APIVersion, Kind: schema.Kind,
		Metadata: schema.Metadata{Name: "probe"},
		Spec: schema.Spec{
			Registry: schema.Registry{Host: "registry.example"},
			Source:   schema.Source{Kind: schema.SourceGit, URL: "https://git.example/fleet.git"},
			Clusters: []schema.Cluster{{Name: "c1", Registration: schema.Registration{Mode: schema.ModeCAPI}}},
		},
	}
	schema.Default(f)
	return f
}

func generateImplemented() bool {
	files, err := generate.Render(minimal(), lock.New(), generate.DefaultOptions())
	return err == nil && len(files) > 0
}

func validateImplemented() bool {
	f := minimal()
	f.Spec.Clusters[0].Registration.Mode = "pull"
	return schema.Validate(f) != nil
}

func positionsImplemented() bool {
	_, err := schema.Parse("fleet.yaml", []byte("apiVersion: fleetgen.dev/v1alpha1\nkind: Fleet\nbogus: 1\n"))
	var es schema.Errors
	if e, ok := err.(schema.Errors); ok {
		es = e
	}
	return len(es) > 0 && es[0].Line > 0
}

func scanImplemented() bool {
	return secrets.Scan([]generate.File{{Path: "s.yaml", Data: []byte(generate.Header + "kind: Secret\n"), Secret: true}}, false) != nil
}

// status runs a command like exec and checks its exit code:
// status 2 fleetgen render.
func status(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: status CODE command [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("status: bad exit code %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("exit status %d, want %d", got, want)
	}
}
