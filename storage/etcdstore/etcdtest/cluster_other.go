//go:build !linux

package etcdtest

import (
	"errors"
	"os"
	"syscall"
)

// platformErr is why StartCluster cannot run here.
var platformErr = errors.New("etcd clusters run on Linux only, where the kernel kills them when the test binary dies (Pdeathsig)")

// The signals of Member.Stop and Member.Continue: never sent here.
var stopSignal, contSignal os.Signal = os.Interrupt, os.Interrupt

func sysProcAttr() *syscall.SysProcAttr { return nil }
