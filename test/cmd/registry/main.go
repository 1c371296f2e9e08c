// Command registry is an OCI registry on loopback, in memory, for
// docs/try-locally.md and the tests that run it: go-containerregistry's
// registry (the one fleetgen's unit tests use), with the OCI 1.1 referrers
// API, so that a new user needs nothing but Go and Git. In real life this is
// your registry (ACR, Harbor, distribution).
//
//	registry serve [-addr 127.0.0.1:5000]   # until stopped; everything is lost then
//	registry push IMAGE                     # push a small image (one file, linux/amd64) as IMAGE,
//	                                        # waiting up to 10 s for the registry to listen
//
// It listens on loopback addresses only, over plain HTTP.
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
}

const usage = "usage: registry serve [-addr 127.0.0.1:5000] | registry push IMAGE"

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "serve":
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		addr := fs.String("addr", "127.0.0.1:5000", "loopback address to listen on")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return serve(ctx, *addr, stdout)
	case "push":
		if len(args) != 2 {
			return errors.New(usage)
		}
		d, err := push(ctx, args[1])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "pushed %s: %s\n", args[1], d)
		return nil
	}
	return errors.New(usage)
}

func serve(ctx context.Context, addr string, stdout io.Writer) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("-addr %s: want a loopback address (127.0.0.1:PORT): this registry has no authentication", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	fmt.Fprintf(stdout, "serving a registry at http://%s (in memory, until stopped)\n", l.Addr())
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// push writes a one-layer linux/amd64 image holding /hello.txt, whose text
// names ref (so two references are two images), and returns its digest.
func push(ctx context.Context, ref string) (v1.Hash, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return v1.Hash{}, err
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	body := []byte("hello from " + ref + "\n")
	if err := tw.WriteHeader(&tar.Header{Name: "hello.txt", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
		return v1.Hash{}, err
	}
	if _, err := tw.Write(body); err != nil {
		return v1.Hash{}, err
	}
	if err := tw.Close(); err != nil {
		return v1.Hash{}, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	base, err = mutate.ConfigFile(base, &v1.ConfigFile{OS: "linux", Architecture: "amd64", RootFS: v1.RootFS{Type: "layers"}, Config: v1.Config{Cmd: []string{"/hello.txt"}}})
	if err != nil {
		return v1.Hash{}, err
	}
	img, err := mutate.Append(base, mutate.Addendum{Layer: static.NewLayer(b.Bytes(), types.OCIUncompressedLayer)})
	if err != nil {
		return v1.Hash{}, err
	}
	d, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	// The registry may have been started a moment ago (registry serve &):
	// wait for it up to 10 s.
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		err = remote.Write(r, img, remote.WithContext(ctx))
		if !errors.Is(err, syscall.ECONNREFUSED) || time.Since(start) > 10*time.Second {
			return d, err
		}
	}
}
