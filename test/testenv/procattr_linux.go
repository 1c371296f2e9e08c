package testenv

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes cmd's process end when this one does, killed or not,
// so that an interrupted bench leaves no registry behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
