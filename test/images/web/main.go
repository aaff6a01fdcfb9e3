// web: an HTTP server whose readiness a test chooses. GET / answers the text of -text (and the
// pod's hostname); /healthz always answers 200; /readyz answers 200 once ready, 503 before.
//
//	-listen :8080       address to serve on
//	-text hello         body of GET /
//	-ready-after 0s     becomes ready after this long
//	-never-ready        /readyz never answers 200
//	-crash-after 0s     exits 1 after this long (0: never), to make a container crash-loop
//
// Every flag can also come from the environment: LISTEN, TEXT, READY_AFTER, NEVER_READY (any
// non-empty value), CRASH_AFTER.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func duration(name, def string) time.Duration {
	d, err := time.ParseDuration(env(name, def))
	if err != nil {
		log.Fatalf("web: bad %s: %v", name, err)
	}
	return d
}

func main() {
	listen := flag.String("listen", env("LISTEN", ":8080"), "address to serve on")
	text := flag.String("text", env("TEXT", "hello"), "body of GET /")
	readyAfter := flag.Duration("ready-after", duration("READY_AFTER", "0s"), "ready after this long")
	neverReady := flag.Bool("never-ready", os.Getenv("NEVER_READY") != "", "never ready")
	crashAfter := flag.Duration("crash-after", duration("CRASH_AFTER", "0s"), "exit 1 after this long (0: never)")
	flag.Parse()

	host, _ := os.Hostname()
	var ready atomic.Bool
	if !*neverReady {
		time.AfterFunc(*readyAfter, func() { ready.Store(true); log.Printf("web: ready") })
	}
	if *crashAfter > 0 {
		time.AfterFunc(*crashAfter, func() { log.Printf("web: crashing as told (-crash-after %s)", *crashAfter); os.Exit(1) })
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "%s from %s\n", *text, host) })
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if !ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	go func() {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
		<-sigs
		os.Exit(0)
	}()
	log.Printf("web: serving %s on %s", *text, *listen)
	log.Fatal(http.ListenAndServe(*listen, mux))
}
