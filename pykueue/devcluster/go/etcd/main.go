// Command etcd is the upstream etcd server, built from the pinned
// go.etcd.io/etcd/server/v3 module; it only hands over to etcdmain.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
