// Command etcd is etcd v3.6's server entry point, built from the module proxy
// for the end-to-end tests (etcd publishes no Go-installable main of its own
// that honours its sibling modules' versions).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
