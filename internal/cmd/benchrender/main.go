// Command benchrender measures `fleetgen render` on generated fleets of 1,000 and
// 10,000 clusters (all four registration modes, two layers): wall time, peak
// RSS of the fleetgen process, the 10k/1k time ratio and the ratio of the 10k
// render to `cp -r` of the same output tree. `make bench` runs it.
//
//	go run ./internal/cmd/benchrender -bin bin/fleetgen
//	go run ./internal/cmd/benchrender -tree-only   # only tree.Write of synthetic files
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"fleetgen.dev/fleetgen/internal/synthetic"
	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/tree"
)

// Targets from issue 2.
const (
	maxWall10k = 3 * time.Second
	maxRSS     = 1 << 30
	maxScale   = 12.0
	maxCpRatio = 3.0

	defaultSize = "1000,10000"
)

func main() {
	bin := flag.String("bin", "bin/fleetgen", "fleetgen binary to measure")
	sizes := flag.String("sizes", defaultSize, "comma-separated fleet sizes (clusters)")
	work := flag.String("dir", "", "work folder (default: a temporary one, removed afterwards)")
	treeOnly := flag.Bool("tree-only", false, "measure tree.Write of synthetic files in-process instead of the binary")
	flag.IntVar(&runs, "runs", 3, "measure each step this many times and keep the fastest (the machine is shared)")
	flag.BoolVar(&keep, "keep", false, "keep the generated fleets and outputs in -dir")
	flag.Parse()
	if err := run(*bin, *sizes, *work, *treeOnly); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

var (
	runs int
	keep bool
)

// best runs fn runs times, after a sync each time so that writeback of earlier
// work does not land on this measurement, and returns the fastest run.
func best(fn func() (time.Duration, int64, error)) (time.Duration, int64, error) {
	var min time.Duration
	var rss int64
	for i := 0; i < max(runs, 1); i++ {
		syscall.Sync()
		d, r, err := fn()
		if err != nil {
			return 0, 0, err
		}
		if i == 0 || d < min {
			min = d
		}
		rss = max(rss, r)
	}
	return min, rss, nil
}

type result struct {
	clusters int
	files    int
	bytes    int64
	wall     time.Duration
	rerender time.Duration
	rssKB    int64
	cp       time.Duration
}

func run(bin, sizeList, work string, treeOnly bool) error {
	var sizes []int
	for _, s := range strings.Split(sizeList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("bad size %q", s)
		}
		sizes = append(sizes, n)
	}
	if work == "" {
		d, err := os.MkdirTemp("", "benchrender-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		work = d
	}
	if !treeOnly {
		abs, err := filepath.Abs(bin)
		if err != nil {
			return err
		}
		bin = abs
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("fleetgen binary: %w (run `make build` first)", err)
		}
	}
	var results []result
	for _, n := range sizes {
		dir := filepath.Join(work, fmt.Sprintf("fleet-%d", n))
		var r result
		var err error
		if treeOnly {
			r, err = measureTree(dir, n)
		} else {
			r, err = measureRender(bin, dir, n)
		}
		if err != nil {
			return err
		}
		results = append(results, r)
		if !keep {
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
		}
	}
	report(results, treeOnly)
	return nil
}

func measureRender(bin, dir string, n int) (result, error) {
	r := result{clusters: n}
	if err := synthetic.Write(dir, n); err != nil {
		return r, err
	}
	out := filepath.Join(dir, "out")
	render := func() (time.Duration, int64, error) {
		cmd := exec.Command(bin, "render", "-q", "-f", filepath.Join(dir, "fleet.yaml"), "-o", out, "--allow-plaintext-secrets")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		start := time.Now()
		err := cmd.Run()
		wall := time.Since(start)
		if err != nil {
			return 0, 0, fmt.Errorf("render %d clusters: %w", n, err)
		}
		ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		var rss int64
		if ru != nil {
			rss = int64(ru.Maxrss) // KiB on Linux
		}
		return wall, rss, nil
	}
	var err error
	// A render into a fresh folder, the number the targets are about.
	if r.wall, r.rssKB, err = best(func() (time.Duration, int64, error) {
		if err := os.RemoveAll(out); err != nil {
			return 0, 0, err
		}
		syscall.Sync()
		return render()
	}); err != nil {
		return r, err
	}
	// A re-render over an up-to-date tree: reads and compares only.
	if r.rerender, _, err = best(render); err != nil {
		return r, err
	}
	if r.files, r.bytes, err = count(out); err != nil {
		return r, err
	}
	r.cp, err = cpBest(out, filepath.Join(dir, "out-cp"))
	return r, err
}

func cpBest(src, dst string) (time.Duration, error) {
	d, _, err := best(func() (time.Duration, int64, error) {
		if err := os.RemoveAll(dst); err != nil {
			return 0, 0, err
		}
		syscall.Sync()
		d, err := cpR(src, dst)
		return d, 0, err
	})
	return d, err
}

// measureTree times tree.Write of the rendered synthetic fleet into
// an empty folder, in-process: the write path without generate.
func measureTree(dir string, n int) (result, error) {
	r := result{clusters: n}
	f := synthetic.Fleet(n)
	files, err := generate.Render(f, synthetic.Lock(f), generate.Options{LayerImages: synthetic.LayerImages(f)})
	if err != nil {
		return r, err
	}
	out := filepath.Join(dir, "out")
	start := time.Now()
	if _, err := tree.Write(out, files); err != nil {
		return r, err
	}
	r.wall = time.Since(start)
	start = time.Now()
	if _, err := tree.Write(out, files); err != nil {
		return r, err
	}
	r.rerender = time.Since(start)
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		r.rssKB = int64(ru.Maxrss)
	}
	if r.files, r.bytes, err = count(out); err != nil {
		return r, err
	}
	r.cp, err = cpBest(out, filepath.Join(dir, "out-cp"))
	return r, err
}

func cpR(src, dst string) (time.Duration, error) {
	start := time.Now()
	if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("cp -r: %v: %s", err, out)
	}
	return time.Since(start), nil
}

func count(dir string) (int, int64, error) {
	var files int
	var size int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		files++
		size += fi.Size()
		return nil
	})
	return files, size, err
}

func report(rs []result, treeOnly bool) {
	what := "fleetgen render (binary, fresh output folder)"
	if treeOnly {
		what = "tree.Write of synthetic files (in-process)"
	}
	fmt.Printf("%s\n\n", what)
	fmt.Printf("%9s %8s %9s %10s %10s %10s %10s %8s\n", "clusters", "files", "MiB", "wall", "re-render", "peakRSS", "cp -r", "vs cp")
	for _, r := range rs {
		ratio := 0.0
		if r.cp > 0 {
			ratio = float64(r.wall) / float64(r.cp)
		}
		fmt.Printf("%9d %8d %9.1f %10s %10s %8dMiB %10s %7.2fx\n", r.clusters, r.files, float64(r.bytes)/(1<<20),
			r.wall.Round(time.Millisecond), r.rerender.Round(time.Millisecond), r.rssKB/1024, r.cp.Round(time.Millisecond), ratio)
	}
	if len(rs) >= 2 {
		first, last := rs[0], rs[len(rs)-1]
		scale := float64(last.wall) / float64(first.wall)
		fmt.Printf("\n%d/%d clusters time ratio: %.2f (target <= %.0f; %.0fx the clusters)\n", last.clusters, first.clusters, scale, maxScale, float64(last.clusters)/float64(first.clusters))
	}
	for _, r := range rs {
		if r.clusters != 10000 {
			continue
		}
		fmt.Printf("10k targets: wall %s (< %s): %s; peak RSS %dMiB (< 1024MiB): %s; vs cp -r %.2fx (<= %.0fx): %s\n",
			r.wall.Round(time.Millisecond), maxWall10k, ok(r.wall < maxWall10k),
			r.rssKB/1024, ok(r.rssKB*1024 < maxRSS),
			float64(r.wall)/float64(r.cp), maxCpRatio, ok(float64(r.wall) <= maxCpRatio*float64(r.cp)))
		if r.files == 0 {
			fmt.Println("warning: the render wrote no files (is pkg/generate implemented?)")
		}
	}
}

func ok(b bool) string {
	if b {
		return "ok"
	}
	return "MISSED"
}

// modes cycles through every registration mode.
var modes = []string{"agent", "manager", "capi", "verrazzano"}
