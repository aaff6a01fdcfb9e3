// job: a Job's container that succeeds or fails on demand. It prints -message, waits -sleep and
// exits with -exit-code (or the environment's EXIT_CODE, MESSAGE, SLEEP). With -dial host:port
// ($VARS expanded, e.g. $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT) it first opens a TCP
// connection there and exits 2 when it cannot: a check that a Service is reachable from a pod.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"
)

func main() {
	code, _ := strconv.Atoi(os.Getenv("EXIT_CODE"))
	sleep, _ := time.ParseDuration(os.Getenv("SLEEP"))
	msg := os.Getenv("MESSAGE")
	flag.IntVar(&code, "exit-code", code, "exit code")
	flag.DurationVar(&sleep, "sleep", sleep, "how long to run before exiting")
	flag.StringVar(&msg, "message", msg, "line to print")
	dial := flag.String("dial", "", "host:port to connect to first ($VARS expanded)")
	flag.Parse()
	if *dial != "" {
		addr := os.ExpandEnv(*dial)
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			fmt.Printf("job: cannot connect to %s: %v\n", addr, err)
			os.Exit(2)
		}
		c.Close()
		fmt.Printf("job: connected to %s\n", addr)
	}
	if msg != "" {
		fmt.Println(msg)
	}
	time.Sleep(sleep)
	fmt.Printf("job: exiting with code %d\n", code)
	os.Exit(code)
}
