// pause: the pod sandbox image of the local cluster's real node (containerd's sandbox_image).
// It holds the pod's namespaces and does nothing else: it sleeps until SIGTERM or SIGINT and
// exits 0. As PID 1 of the sandbox it also reaps orphaned children.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s == syscall.SIGCHLD {
			for {
				pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		os.Exit(0)
	}
}
