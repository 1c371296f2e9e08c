package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// children are the processes the bench runs (fleetgen, cp -r, the fleet
// generator) and what an interrupt removes: a full run holds gigabytes of
// generated fleets and outputs, and one left behind fills the disk.
var children struct {
	mu       sync.Mutex
	running  map[int]bool // pids
	trash    []string
	stopping bool
}

// errStopping is what a child started after an interrupt gets.
var errStopping = errors.New("interrupted")

// removeOnInterrupt adds paths to what an interrupt removes.
func removeOnInterrupt(paths ...string) {
	children.mu.Lock()
	children.trash = append(children.trash, paths...)
	children.mu.Unlock()
}

// runChild is cmd.Run, the child known to the interrupt handler, which
// kills it before it removes the folders the child may be writing.
func runChild(cmd *exec.Cmd) error {
	children.mu.Lock()
	if children.stopping {
		children.mu.Unlock()
		return errStopping
	}
	if err := cmd.Start(); err != nil {
		children.mu.Unlock()
		return err
	}
	pid := cmd.Process.Pid
	if children.running == nil {
		children.running = map[int]bool{}
	}
	children.running[pid] = true
	children.mu.Unlock()
	err := cmd.Wait()
	children.mu.Lock()
	delete(children.running, pid)
	children.mu.Unlock()
	waitIfStopping()
	return err
}

// waitIfStopping never returns once an interrupt is being handled: the
// handler exits. A terminal's Ctrl-C reaches the children too, and one that
// ends first must not make the bench exit before the handler has cleaned up.
func waitIfStopping() {
	children.mu.Lock()
	stopping := children.stopping
	children.mu.Unlock()
	if stopping {
		select {}
	}
}

// outputOf is cmd.CombinedOutput through runChild.
func outputOf(cmd *exec.Cmd) ([]byte, error) {
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := runChild(cmd)
	return b.Bytes(), err
}

// stopOnInterrupt makes SIGINT and SIGTERM kill the running children, wait
// for them to end (up to a second), remove what removeOnInterrupt named, and
// exit 130.
func stopOnInterrupt() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		children.mu.Lock()
		children.stopping = true
		var pids []int
		for pid := range children.running {
			pids = append(pids, pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
		trash := children.trash
		children.mu.Unlock()
		// runChild's Wait reaps each one; until then it still exists.
		for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			alive := false
			for _, pid := range pids {
				alive = alive || syscall.Kill(pid, 0) == nil
			}
			if !alive {
				break
			}
		}
		for _, p := range trash {
			os.RemoveAll(p)
		}
		os.Exit(130)
	}()
}
