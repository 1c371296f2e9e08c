// Command fleetgen compiles fleet.yaml into the manifests Fleet, Verrazzano and
// Flux reconcile, mirrors every image they need and publishes the result.
package main

import (
	"context"
	"io"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the whole CLI; tests call it in-process.
//
// SKELETON: CLI owner implements with cobra.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return 0
}
