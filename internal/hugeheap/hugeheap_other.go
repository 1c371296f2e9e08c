//go:build !linux

package hugeheap

func enable(int) bool { return false }
