//go:build !linux

package main

import "syscall"

// childAttr has nothing to add outside Linux.
func childAttr() *syscall.SysProcAttr { return nil }
