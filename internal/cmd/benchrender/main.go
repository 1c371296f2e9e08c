// Command benchrender measures `fleetgen render` on generated fleets of 1,000 and
// 10,000 clusters (all four registration modes, two layers): wall time, peak
// RSS of the fleetgen process, the 10k/1k time ratio and the ratio of the 10k
// render to `cp -r` of the same output tree. `make bench` runs it.
//
// It measures twice: on the disk of -dir (where a user's checkout lives) and on
// tmpfs (-tmpfs, /dev/shm by default), which takes the disk out and leaves
// fleetgen's own cost. Each fresh render is followed at once by a `cp -r` of
// its output, and the fastest of -runs pairs is kept, so that both sides of the
// ratio see the same disk: creating a file on a shared virtual disk can take
// anything from 0.1 to 2 ms from one minute to the next.
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
)

// options are the command's flags.
type options struct {
	bin      string
	sizes    []int
	dir      string // work folder on disk ("": a temporary one)
	tmpfs    string // work folder on tmpfs ("": skip that pass)
	treeOnly bool
	runs     int
	keep     bool
}

func main() {
	var o options
	sizes := flag.String("sizes", "1000,10000", "comma-separated fleet sizes (clusters)")
	flag.StringVar(&o.bin, "bin", "bin/fleetgen", "fleetgen binary to measure")
	flag.StringVar(&o.dir, "dir", "", "work folder on disk (default: a temporary one, removed afterwards)")
	flag.StringVar(&o.tmpfs, "tmpfs", "/dev/shm", "a tmpfs folder for the second pass (\"\" to skip it)")
	flag.BoolVar(&o.treeOnly, "tree-only", false, "measure tree.Write of synthetic files in-process instead of the binary")
	flag.IntVar(&o.runs, "runs", 3, "measure each step this many times and keep the fastest (the machine is shared)")
	flag.BoolVar(&o.keep, "keep", false, "keep the generated fleets and outputs in -dir (skips the tmpfs pass)")
	generate := flag.String("generate", "", "internal: write a synthetic fleet of -sizes clusters into this folder and exit")
	flag.Parse()
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "error: bad size %q\n", s)
			os.Exit(2)
		}
		o.sizes = append(o.sizes, n)
	}
	if *generate != "" {
		if err := synthetic.Write(*generate, o.sizes[0]); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if !o.treeOnly {
		abs, err := filepath.Abs(o.bin)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("fleetgen binary: %w (run `make build` first)", err)
		}
		o.bin = abs
	}
	disk := o.dir
	if disk == "" {
		d, err := os.MkdirTemp("", "benchrender-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		disk = d
	}
	if err := pass(o, "disk ("+disk+")", disk); err != nil {
		return err
	}
	if o.tmpfs == "" || o.keep {
		return nil
	}
	if fi, err := os.Stat(o.tmpfs); err != nil || !fi.IsDir() {
		fmt.Printf("\n(no tmpfs pass: %s is not a folder)\n", o.tmpfs)
		return nil
	}
	mem, err := os.MkdirTemp(o.tmpfs, "benchrender-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(mem)
	fmt.Println()
	return pass(o, "tmpfs ("+o.tmpfs+"): fleetgen's own cost, without the disk", mem)
}

// pass measures every size with its work folders under work, and reports.
func pass(o options, where, work string) error {
	var results []result
	for _, n := range o.sizes {
		dir := filepath.Join(work, fmt.Sprintf("fleet-%d", n))
		var r result
		var err error
		if o.treeOnly {
			r, err = measureTree(o, dir, n)
		} else {
			r, err = measureRender(o, dir, n)
		}
		if err != nil {
			return err
		}
		results = append(results, r)
		if !o.keep {
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
		}
	}
	report(results, o.treeOnly, where)
	return nil
}

type result struct {
	clusters int
	files    int
	bytes    int64
	wall     time.Duration // fresh output folder
	rerender time.Duration // over an up-to-date tree
	rssKB    int64
	cp       time.Duration // cp -r of the same tree, right after each fresh write
}

// fresh measures runs pairs of (write into a fresh folder, cp -r of that
// folder), after a sync each so that writeback of earlier work does not land
// on the measurement, and keeps the fastest of each side.
func fresh(o options, out string, write func() (time.Duration, int64, error)) (wall, cp time.Duration, rssKB int64, err error) {
	cpDst := out + "-cp"
	for i := 0; i < max(o.runs, 1); i++ {
		if err := removeAll(out, cpDst); err != nil {
			return 0, 0, 0, err
		}
		syscall.Sync()
		d, rss, err := write()
		if err != nil {
			return 0, 0, 0, err
		}
		syscall.Sync()
		c, err := cpR(out, cpDst)
		if err != nil {
			return 0, 0, 0, err
		}
		if i == 0 || d < wall {
			wall = d
		}
		if i == 0 || c < cp {
			cp = c
		}
		rssKB = max(rssKB, rss)
	}
	return wall, cp, rssKB, removeAll(cpDst)
}

// rerun measures the fastest of runs writes over an up-to-date tree.
func rerun(o options, write func() (time.Duration, int64, error)) (time.Duration, error) {
	var best time.Duration
	for i := 0; i < max(o.runs, 1); i++ {
		d, _, err := write()
		if err != nil {
			return 0, err
		}
		if i == 0 || d < best {
			best = d
		}
	}
	return best, nil
}

func measureRender(o options, dir string, n int) (result, error) {
	r := result{clusters: n}
	// Generate in a child process: Linux reports a child's peak RSS as at least
	// that of the parent it was forked from, so this process must stay small.
	self, err := os.Executable()
	if err != nil {
		return r, err
	}
	if out, err := exec.Command(self, "-generate", dir, "-sizes", strconv.Itoa(n)).CombinedOutput(); err != nil {
		return r, fmt.Errorf("generate %d clusters: %v: %s", n, err, out)
	}
	out := filepath.Join(dir, "out")
	render := func() (time.Duration, int64, error) {
		cmd := exec.Command(o.bin, "render", "-q", "-f", filepath.Join(dir, "fleet.yaml"), "-o", out, "--allow-plaintext-secrets")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		start := time.Now()
		err := cmd.Run()
		wall := time.Since(start)
		if err != nil {
			return 0, 0, fmt.Errorf("render %d clusters: %w", n, err)
		}
		var rss int64
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = int64(ru.Maxrss) // KiB on Linux
		}
		return wall, rss, nil
	}
	if r.wall, r.cp, r.rssKB, err = fresh(o, out, render); err != nil {
		return r, err
	}
	if r.rerender, err = rerun(o, render); err != nil {
		return r, err
	}
	r.files, r.bytes, err = count(out)
	return r, err
}

// measureTree times tree.Write of the rendered synthetic fleet in-process:
// the write path without loading and generating.
func measureTree(o options, dir string, n int) (result, error) {
	r := result{clusters: n}
	f := synthetic.Fleet(n)
	files, err := generate.Render(f, synthetic.Lock(f), generate.Options{LayerImages: synthetic.LayerImages(f)})
	if err != nil {
		return r, err
	}
	out := filepath.Join(dir, "out")
	write := func() (time.Duration, int64, error) {
		start := time.Now()
		_, err := tree.Write(out, files)
		return time.Since(start), 0, err
	}
	if r.wall, r.cp, _, err = fresh(o, out, write); err != nil {
		return r, err
	}
	if r.rerender, err = rerun(o, write); err != nil {
		return r, err
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		r.rssKB = int64(ru.Maxrss)
	}
	r.files, r.bytes, err = count(out)
	return r, err
}

func removeAll(paths ...string) error {
	for _, p := range paths {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	return nil
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

func report(rs []result, treeOnly bool, where string) {
	what := "fleetgen render (binary, fresh output folder)"
	if treeOnly {
		what = "tree.Write of synthetic files (in-process)"
	}
	fmt.Printf("%s on %s\n\n", what, where)
	fmt.Printf("%9s %8s %9s %10s %10s %10s %10s %8s\n", "clusters", "files", "MiB", "wall", "re-render", "peakRSS", "cp -r", "vs cp")
	for _, r := range rs {
		fmt.Printf("%9d %8d %9.1f %10s %10s %8dMiB %10s %7.2fx\n", r.clusters, r.files, float64(r.bytes)/(1<<20),
			r.wall.Round(time.Millisecond), r.rerender.Round(time.Millisecond), r.rssKB/1024, r.cp.Round(time.Millisecond), ratio(r.wall, r.cp))
	}
	if len(rs) >= 2 {
		first, last := rs[0], rs[len(rs)-1]
		fmt.Printf("\n%d/%d clusters time ratio: %.2f (target <= %.0f; %.0fx the clusters)\n", last.clusters, first.clusters,
			ratio(last.wall, first.wall), maxScale, float64(last.clusters)/float64(first.clusters))
	}
	for _, r := range rs {
		if r.clusters != 10000 {
			continue
		}
		fmt.Printf("10k targets: wall %s (< %s): %s; peak RSS %dMiB (< 1024MiB): %s; vs cp -r %.2fx (<= %.0fx): %s\n",
			r.wall.Round(time.Millisecond), maxWall10k, ok(r.wall < maxWall10k),
			r.rssKB/1024, ok(r.rssKB*1024 < maxRSS),
			ratio(r.wall, r.cp), maxCpRatio, ok(ratio(r.wall, r.cp) <= maxCpRatio))
		if r.wall >= maxWall10k && r.cp >= maxWall10k/2 {
			fmt.Printf("  (cp -r alone takes %s on this disk; the tmpfs pass shows fleetgen without it)\n", r.cp.Round(time.Millisecond))
		}
		if r.files == 0 {
			fmt.Println("warning: the render wrote no files (is pkg/generate implemented?)")
		}
	}
}

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func ok(b bool) string {
	if b {
		return "ok"
	}
	return "MISSED"
}
