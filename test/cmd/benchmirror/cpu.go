package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"fleetgen.dev/fleetgen/test/testenv"
)

// showCPU prints, for the floor and each cold run, the CPU time of this
// process (fleetgen's mirror runs in it, with the counting proxy) and of the
// source and target registries.
var showCPU bool

// registryHost maps a counting proxy's host to the registry behind it.
var registryHost = map[string]string{}

// cpuUse is what three processes have spent: this one, the source
// registry and the target registry.
type cpuUse struct{ self, source, target time.Duration }

// cpuNow reads the CPU time spent so far by this process and by the
// registries serving source and target (a proxy's host, or the registry's).
func cpuNow(source, target string) cpuUse {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	if h, ok := registryHost[target]; ok {
		target = h
	}
	return cpuUse{
		self:   time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		source: procCPU(testenv.RegistryPID(source)),
		target: procCPU(testenv.RegistryPID(target)),
	}
}

// procCPU is the user and system time of process pid (0: none), from
// /proc/PID/stat.
func procCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0
	}
	f := strings.Fields(s[i+2:]) // from field 3, state
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// since says what each process spent since u.
func (u cpuUse) since(source, target string) string {
	n := cpuNow(source, target)
	self, src, dst := n.self-u.self, n.source-u.source, n.target-u.target
	return fmt.Sprintf("CPU: bench process (fleetgen, proxy) %.2f s, source registry %.2f s, target registry %.2f s, all %.2f s",
		self.Seconds(), src.Seconds(), dst.Seconds(), (self + src + dst).Seconds())
}
