// job: a Job's container that succeeds or fails on demand. It prints -message, waits -sleep and
// exits with -exit-code (or the environment's EXIT_CODE, MESSAGE, SLEEP).
package main

import (
	"flag"
	"fmt"
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
	flag.Parse()
	if msg != "" {
		fmt.Println(msg)
	}
	time.Sleep(sleep)
	fmt.Printf("job: exiting with code %d\n", code)
	os.Exit(code)
}
