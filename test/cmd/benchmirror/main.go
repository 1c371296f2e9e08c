// Command benchmirror measures fleetgen's mirror against the tools users would
// pick instead (`skopeo sync`, `regsync once`, a sequential `crane copy`
// loop) and against the floor (every unique blob pushed once, 8 at a time),
// on real distribution registries on loopback, in one run.
//
// It builds a reproducible data set shaped like a real fleet's (126 references
// over 30 repositories, 12 two-platform indexes, 2 OCI Helm charts, base layers
// shared between repositories, about 700 MiB of unique blobs; -scale shrinks
// the blobs), pushes it to a source registry and prints, in one run: fleetgen's
// cold mirror, its warm re-run (best of three) beside that run's requests
// replayed bare (replay.go), skopeo, regsync, the crane loop and the floor,
// each with the blob bytes that reached its (fresh) target registry, and
// their ratios.
//
//	go run ./test/cmd/benchmirror            # full size, about a minute
//	go run ./test/cmd/benchmirror -scale 0.05
//	go run ./test/cmd/benchmirror -no-crane -no-peers -cpu  # and the CPU time each process spent
//
// It needs /usr/bin/docker-registry (Debian package docker-registry), skopeo
// (Debian package skopeo) and regsync (FLEETGEN_REGSYNC, which
// test/e2e/tools/build.sh builds; `make bench-mirror` sets it), and builds
// crane from the module cache with `go build`. A peer that is missing is
// skipped with a note. It needs about 2.5 GiB free in $TMPDIR (2.1 GiB at
// most in a full run): the source registry and the one being measured.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/logs"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/verify"
	"fleetgen.dev/fleetgen/test/testenv"
)

const mib = 1 << 20

// warmProfile is where to write a CPU profile of the warm re-runs ("": none).
var warmProfile string

// noReferrers leaves the indexes unsigned and mirrors without referrers.
var noReferrers bool

// showTimeline prints what the target saw during the floor and the cold
// fleetgen run (timeline.go).
var showTimeline bool

// airGapOnly skips every row but the air gap's.
var airGapOnly bool

// workDir is the run's folder, removed on an interrupt too.
var workDir atomic.Pointer[string]

func main() {
	scale := flag.Float64("scale", 1, "blob size factor: 1 is about 700 MiB of unique blobs")
	seed := flag.Int64("seed", 1, "random seed of the data set")
	jobs := flag.Int("jobs", 8, "fleetgen mirror --jobs, and the floor's concurrency")
	noCrane := flag.Bool("no-crane", false, "skip the crane loop")
	noPeers := flag.Bool("no-peers", false, "skip skopeo and regsync")
	flag.BoolVar(&noReferrers, "no-referrers", false, "sign nothing and mirror with --no-referrers")
	verbose := flag.Bool("v", false, "print go-containerregistry's warnings (retries) to stderr")
	flag.StringVar(&warmProfile, "warm-cpuprofile", "", "write a CPU profile of the warm re-runs to this file")
	flag.BoolVar(&showTimeline, "timeline", false, "print the requests the target saw during the floor and fleetgen's cold run: uploads over time, and the rest")
	flag.BoolVar(&airGapOnly, "airgap-only", false, "measure only the air gap: direct mirror, mirror --to, mirror --from")
	flag.BoolVar(&showCPU, "cpu", false, "print the CPU time the bench process and the two registries spent in the floor and each cold run")
	flag.Parse()
	if *verbose {
		logs.Warn.SetOutput(os.Stderr)
	}
	// Interrupted, the run's folder goes too (its registries die with this
	// process: testenv).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		if d := workDir.Load(); d != nil {
			os.RemoveAll(*d)
		}
		os.Exit(130)
	}()
	if err := run(context.Background(), *scale, *seed, *jobs, !*noCrane, !*noPeers); err != nil {
		fmt.Fprintln(os.Stderr, "benchmirror:", err)
		os.Exit(1)
	}
}

// registry starts a fresh distribution registry under tmp with a counting
// proxy in front of it; stopping it removes its storage (a full run would
// otherwise hold every registry's copy of the data set, about 10 GiB, until
// it ends).
func registry(tmp, label string) (*testenv.Proxy, func(), error) {
	dir, err := os.MkdirTemp(tmp, label+"-")
	if err != nil {
		return nil, nil, err
	}
	host, stop, err := testenv.StartRegistry(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	p, err := testenv.NewProxy(host, testenv.ProxyOptions{Timeline: showTimeline})
	if err != nil {
		stop()
		os.RemoveAll(dir)
		return nil, nil, err
	}
	registryHost[p.Host] = host
	return p, func() { p.Close(); stop(); os.RemoveAll(dir) }, nil
}

type result struct {
	name    string
	elapsed time.Duration
	bytes   int64
}

func run(ctx context.Context, scale float64, seed int64, jobs int, withCrane, withPeers bool) error {
	if _, err := os.Stat(testenv.RegistryBinary); err != nil {
		return fmt.Errorf("%s not found: apt-get install docker-registry", testenv.RegistryBinary)
	}
	tmp, err := os.MkdirTemp("", "benchmirror-")
	if err != nil {
		return err
	}
	workDir.Store(&tmp)
	defer os.RemoveAll(tmp)
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "# "+format+"\n", args...) }

	crane := filepath.Join(tmp, "crane")
	if withCrane {
		logf("building crane")
		cmd := exec.Command("go", "build", "-o", crane, "github.com/google/go-containerregistry/cmd/crane")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build crane: %w", err)
		}
	}

	logf("generating the data set (seed %d, scale %g)", seed, scale)
	items, err := dataset(rand.New(rand.NewSource(seed)), scale)
	if err != nil {
		return err
	}
	sizes, where, err := blobsOf(items)
	if err != nil {
		return err
	}
	var unique int64
	for _, s := range sizes {
		unique += s
	}
	repos := map[string]bool{}
	indexes, charts := 0, 0
	for _, it := range items {
		repos[it.repo] = true
		if it.idx != nil {
			indexes++
		}
		if it.img != nil {
			if m, _ := it.img.Manifest(); m != nil && m.Config.MediaType == "application/vnd.cncf.helm.config.v1+json" {
				charts++
			}
		}
	}

	srcDir, err := os.MkdirTemp(tmp, "source-")
	if err != nil {
		return err
	}
	src, stopSrc, err := testenv.StartRegistry(srcDir)
	if err != nil {
		return err
	}
	defer stopSrc()
	logf("pushing %d references to the source registry %s", len(items), src)
	pusher, err := remote.NewPusher(remote.WithJobs(8))
	if err != nil {
		return err
	}
	var refs []string
	for _, it := range items {
		refs = append(refs, src+"/"+it.repo+":"+it.tag)
	}
	if err := parallel(4, len(items), func(i int) error {
		ref, err := name.ParseReference(refs[i])
		if err != nil {
			return err
		}
		if items[i].idx != nil {
			return pusher.Push(ctx, ref, items[i].idx)
		}
		return pusher.Push(ctx, ref, items[i].img)
	}); err != nil {
		return fmt.Errorf("push data set: %w", err)
	}
	signed := 0
	// The referrers' blobs join the floor's: a copy with referrers pushes
	// them too (a signature's, an SBOM's and a bundle's config and layer).
	var blobsMu sync.Mutex
	imageBlobs := len(sizes)
	addBlobs := func(repo string, img v1.Image) error {
		m, err := img.Manifest()
		if err != nil {
			return err
		}
		blobsMu.Lock()
		defer blobsMu.Unlock()
		for _, d := range append([]v1.Descriptor{m.Config}, m.Layers...) {
			if _, ok := sizes[d.Digest]; !ok {
				sizes[d.Digest], where[d.Digest] = d.Size, repo
				unique += d.Size
			}
		}
		return nil
	}
	if !noReferrers {
		// Each index's supply chain: a cosign signature under its legacy tag
		// and an SBOM referrer (the tag index path: distribution 2.8).
		logf("signing the %d indexes: a cosign signature tag and an SBOM referrer each", indexes)
		if err := parallel(4, len(items), func(i int) error {
			if items[i].idx == nil {
				return nil
			}
			repo, err := name.NewRepository(src + "/" + items[i].repo)
			if err != nil {
				return err
			}
			d, err := items[i].idx.Digest()
			if err != nil {
				return err
			}
			sz, err := items[i].idx.Size()
			if err != nil {
				return err
			}
			sig := testenv.ArtifactImage(testenv.CosignSignatureType, "", `{"critical":{"image":{"docker-manifest-digest":"`+d.String()+`"}}}`, nil)
			if err := addBlobs(items[i].repo, sig); err != nil {
				return err
			}
			if err := remote.Write(repo.Tag("sha256-"+d.Hex+".sig"), sig, remote.WithContext(ctx)); err != nil {
				return err
			}
			sbom := testenv.ArtifactImage("text/spdx", testenv.SBOMType, `{"spdxVersion":"SPDX-2.3","name":"`+items[i].repo+`"}`,
				&v1.Descriptor{MediaType: types.OCIImageIndex, Digest: d, Size: sz})
			sd, err := sbom.Digest()
			if err != nil {
				return err
			}
			if err := addBlobs(items[i].repo, sbom); err != nil {
				return err
			}
			return remote.Write(repo.Digest(sd.String()), sbom, remote.WithContext(ctx))
		}); err != nil {
			return fmt.Errorf("sign data set: %w", err)
		}
		signed = indexes
	}
	// Every reference signed with a key (a cosign v3 bundle referrer), for
	// the rows with spec.verify on.
	key, err := testenv.GenerateKey()
	if err != nil {
		return err
	}
	if !noReferrers {
		logf("signing the %d references with a key (bundle referrers)", len(items))
		if err := parallel(4, len(items), func(i int) error {
			repo, err := name.NewRepository(src + "/" + items[i].repo)
			if err != nil {
				return err
			}
			var desc v1.Descriptor
			if items[i].idx != nil {
				desc.MediaType, desc.Digest, desc.Size = types.OCIImageIndex, must(items[i].idx.Digest()), must(items[i].idx.Size())
				if mt, err := items[i].idx.MediaType(); err == nil {
					desc.MediaType = mt
				}
			} else {
				desc.Digest, desc.Size = must(items[i].img.Digest()), must(items[i].img.Size())
				desc.MediaType = must(items[i].img.MediaType())
			}
			b, err := key.SignBundle(testenv.CosignStatement(desc.Digest))
			if err != nil {
				return err
			}
			ref := testenv.ArtifactImage(testenv.BundleType, testenv.BundleType, string(b), &desc)
			rd, err := ref.Digest()
			if err != nil {
				return err
			}
			if err := addBlobs(items[i].repo, ref); err != nil {
				return err
			}
			return remote.Write(repo.Digest(rd.String()), ref, remote.WithContext(ctx))
		}); err != nil {
			return fmt.Errorf("sign data set: %w", err)
		}
	}
	items = nil // let the blobs go

	var results []result

	// The floor (every unique blob pushed once, jobs at a time, to a fresh
	// registry, read from the source as a copy does) and fleetgen's cold
	// mirror, each into a fresh registry, three rounds in alternating order
	// (floor first, then fleetgen first, ...), best of three each: the first
	// run to read a repository's blobs from the source registry is slower
	// than the next, whichever it is.
	if !airGapOnly {
		digests := make([]v1.Hash, 0, len(sizes))
		for d := range sizes {
			digests = append(digests, d)
		}
		sort.Slice(digests, func(i, j int) bool { return digests[i].String() < digests[j].String() })
		floor := func() (result, error) {
			p, stop, err := registry(tmp, "floor")
			if err != nil {
				return result{}, err
			}
			defer stop()
			puller, err := remote.NewPuller()
			if err != nil {
				return result{}, err
			}
			floorPusher, err := remote.NewPusher(remote.WithJobs(jobs))
			if err != nil {
				return result{}, err
			}
			dst, err := name.NewRepository(p.Host + "/floor/blobs")
			if err != nil {
				return result{}, err
			}
			settle()
			cpu := cpuNow(src, p.Host)
			start := time.Now()
			err = parallel(jobs, len(digests), func(i int) error {
				d := digests[i]
				ref, err := name.NewDigest(src + "/" + where[d] + "@" + d.String())
				if err != nil {
					return err
				}
				l, err := puller.Layer(ctx, ref)
				if err != nil {
					return err
				}
				if ml, ok := l.(*remote.MountableLayer); ok {
					l = ml.Layer // nothing to mount from in the target
				}
				return floorPusher.Upload(ctx, dst, sized{Layer: l, size: sizes[d]})
			})
			r := result{"floor (unique blobs once)", time.Since(start), p.BlobBytes()}
			if showCPU {
				logf("floor: %s", cpu.since(src, p.Host))
			}
			if showTimeline {
				logf("%s", timeline("floor", p.Spans()))
			}
			if err != nil {
				return r, fmt.Errorf("floor: %w", err)
			}
			return r, nil
		}
		// cold mirrors into a fresh registry; the caller stops it.
		cold := func() (result, []mirror.Pair, *testenv.Proxy, func(), error) {
			p, stop, err := registry(tmp, "fleetgen")
			if err != nil {
				return result{}, nil, nil, nil, err
			}
			pairs, err := mirror.Plan(schema.Registry{Host: p.Host}, refs)
			if err != nil {
				stop()
				return result{}, nil, nil, nil, err
			}
			settle()
			cpu := cpuNow(src, p.Host)
			_, stats, err := mirror.Run(ctx, pairs, mirror.WithJobs(jobs), mirror.WithReferrers(!noReferrers))
			if showCPU {
				logf("fleetgen cold: %s", cpu.since(src, p.Host))
			}
			if err != nil {
				stop()
				return result{}, nil, nil, nil, fmt.Errorf("fleetgen cold: %w", err)
			}
			if want := 2*signed + map[bool]int{false: len(refs)}[noReferrers]; stats.Referrers != want {
				stop()
				return result{}, nil, nil, nil, fmt.Errorf("fleetgen cold: %d referrers copied, want %d", stats.Referrers, want)
			}
			if showTimeline {
				logf("%s", timeline("fleetgen cold", p.Spans()))
			}
			return result{"fleetgen mirror, cold", stats.Elapsed, p.BlobBytes()}, pairs, p, stop, nil
		}
		logf("floor (%d unique blobs, %d at a time) and fleetgen cold (%d references, jobs %d), interleaved, best of 3", len(digests), jobs, len(refs), jobs)
		var bestFloor, bestCold result
		var (
			pairs []mirror.Pair
			p     *testenv.Proxy
			stop  = func() {}
		)
		for round := 0; round < 3; round++ {
			for _, which := range [][]string{{"floor", "cold"}, {"cold", "floor"}}[round%2] {
				if which == "floor" {
					r, err := floor()
					if err != nil {
						stop()
						return err
					}
					logf("floor: %.2f s", r.elapsed.Seconds())
					if bestFloor.name == "" || r.elapsed < bestFloor.elapsed {
						bestFloor = r
					}
					continue
				}
				stop() // the previous round's registry; the last one stays for the warm re-run
				r, ps, px, st, err := cold()
				if err != nil {
					return err
				}
				pairs, p, stop = ps, px, st
				logf("fleetgen cold: %.2f s", r.elapsed.Seconds())
				if bestCold.name == "" || r.elapsed < bestCold.elapsed {
					bestCold = r
				}
			}
		}
		bestFloor.name, bestCold.name = "floor (best of 3)", "fleetgen cold (best of 3)"
		results = append(results, bestFloor, bestCold)

		// The warm re-run, best of three (the machine is shared).
		p.Reset()
		var best time.Duration
		if warmProfile != "" {
			f, err := os.Create(warmProfile)
			if err != nil {
				stop()
				return err
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				stop()
				return err
			}
		}
		for i := 0; i < 3; i++ {
			_, stats, err := mirror.Run(ctx, pairs, mirror.WithJobs(jobs), mirror.WithReferrers(!noReferrers))
			if err != nil {
				stop()
				return fmt.Errorf("fleetgen warm: %w", err)
			}
			if stats.Present != len(pairs) {
				stop()
				return fmt.Errorf("fleetgen warm: %d of %d present", stats.Present, len(pairs))
			}
			if i == 0 || stats.Elapsed < best {
				best = stats.Elapsed
			}
		}
		if warmProfile != "" {
			pprof.StopCPUProfile()
		}
		results = append(results, result{"fleetgen mirror, warm", best, p.BlobBytes()})
		reqs, err := recordWarm(ctx, pairs, jobs)
		if err != nil {
			stop()
			return err
		}
		bare, err := replay(ctx, reqs, 3)
		if err != nil {
			stop()
			return err
		}
		warmRequests = len(reqs)
		results = append(results, result{warmReplay, bare, 0})
		stop()
	}

	// spec.verify: cold runs with verification off and on, interleaved
	// (off, on, on, off, off, on) into fresh registries, best of three each;
	// each cold run with it on is followed by a warm re-run (best of three).
	if !noReferrers && !airGapOnly {
		f := &schema.Fleet{Spec: schema.Spec{Verify: []schema.VerifyPolicy{{Cosign: &schema.CosignVerify{Keys: []schema.FileRef{{File: "cosign.pub", Data: key.PublicPEM}}}}}}}
		ps, err := verify.Compile(f, nil)
		if err != nil {
			return err
		}
		best, bestWarm := map[bool]time.Duration{}, map[bool]time.Duration{}
		for round := 0; round < 3; round++ {
			for _, on := range [][]bool{{false, true}, {true, false}}[round%2] {
				p, stop, err := registry(tmp, "verify")
				if err != nil {
					return err
				}
				pairs, err := mirror.Plan(schema.Registry{Host: p.Host}, refs)
				if err != nil {
					stop()
					return err
				}
				opts := []mirror.Option{mirror.WithJobs(jobs)}
				if on {
					opts = append(opts, mirror.WithVerify(ps))
				}
				settle()
				entries, stats, err := mirror.Run(ctx, pairs, opts...)
				if err != nil {
					stop()
					return fmt.Errorf("fleetgen cold, verify %v: %w", on, err)
				}
				if on && (len(entries) != len(pairs) || entries[0].Verified == nil) {
					stop()
					return fmt.Errorf("fleetgen cold, verify on: entries not verified")
				}
				if b, ok := best[on]; !ok || stats.Elapsed < b {
					best[on] = stats.Elapsed
				}
				logf("fleetgen cold, verify %v: %.2f s", on, stats.Elapsed.Seconds())
				if on { // and its warm re-run: every signature verified again
					_, ws, err := mirror.Run(ctx, pairs, opts...)
					if err == nil && ws.Present != len(pairs) {
						err = fmt.Errorf("%d of %d present", ws.Present, len(pairs))
					}
					if err != nil {
						stop()
						return fmt.Errorf("fleetgen warm, verify on: %w", err)
					}
					if b, ok := bestWarm[on]; !ok || ws.Elapsed < b {
						bestWarm[on] = ws.Elapsed
					}
				}
				stop()
			}
		}
		results = append(results, result{"cold, verify off (best of 3)", best[false], 0}, result{"cold, verify on (best of 3)", best[true], 0}, result{"warm, verify on (best of 3)", bestWarm[true], 0})
	}

	// The air gap: a direct mirror, mirror --to a layout folder and mirror
	// --from it, each cold into a fresh registry or folder, with spec.verify
	// on as the air gap runs it, interleaved, best of three each.
	if !noReferrers {
		r, err := airGap(ctx, tmp, refs, key, jobs, logf)
		if err != nil {
			return err
		}
		results = append(results, r...)
	}

	// The peers, each into a fresh registry.
	if withPeers {
		logf("skopeo sync: %d references", len(refs))
		if r, err := skopeoSync(ctx, tmp, src, refs); err != nil {
			logf("skopeo skipped: %v", err)
		} else {
			results = append(results, r)
		}
		if bin := os.Getenv("FLEETGEN_REGSYNC"); bin == "" {
			logf("regsync skipped: FLEETGEN_REGSYNC is not set (test/e2e/tools/build.sh --path regsync)")
		} else {
			logf("regsync once: %d references, %d at a time", len(refs), jobs)
			r, err := regsyncOnce(ctx, tmp, bin, src, refs, jobs, !noReferrers)
			if err != nil {
				return err
			}
			results = append(results, r)
		}
	}
	if withCrane {
		logf("crane copy loop: %d references", len(refs))
		r, err := craneLoop(ctx, tmp, crane, refs)
		if err != nil {
			return err
		}
		results = append(results, r)
	}

	fmt.Printf("data set: %d references, %d repositories, %d indexes (%d signed, with an SBOM), %d OCI charts, %s of unique blobs (%d of images, %d of referrers: the floor pushes them all) (seed %d, scale %g); referrers %s\n",
		len(refs), len(repos), indexes, signed, charts, human(unique), imageBlobs, len(sizes)-imageBlobs, seed, scale, map[bool]string{true: "off", false: "on"}[noReferrers])
	report(results, unique)
	return nil
}
