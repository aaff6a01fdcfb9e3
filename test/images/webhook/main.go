// webhook: an admission webhook server that allows every request. It serves HTTPS with the
// certificate and key it is given (-cert, -key: PEM files, e.g. a mounted Secret) on -listen and
// answers every AdmissionReview (admission.k8s.io/v1) POSTed to any path with allowed: true and
// the request's uid. GET /healthz answers 200 (for probes). Each review is logged as one line.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
)

type review struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Request    *reviewRequest  `json:"request,omitempty"`
	Response   *reviewResponse `json:"response,omitempty"`
}

type reviewRequest struct {
	UID       string `json:"uid"`
	Operation string `json:"operation"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Kind      struct {
		Group   string `json:"group"`
		Version string `json:"version"`
		Kind    string `json:"kind"`
	} `json:"kind"`
}

type reviewResponse struct {
	UID     string `json:"uid"`
	Allowed bool   `json:"allowed"`
}

func main() {
	listen := flag.String("listen", ":8443", "address to serve HTTPS on")
	cert := flag.String("cert", "/tls/tls.crt", "PEM certificate")
	key := flag.String("key", "/tls/tls.key", "PEM private key")
	flag.Parse()

	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
			return
		}
		var in review
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20)).Decode(&in); err != nil || in.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		q := in.Request
		log.Printf("webhook: %s %s %s/%s (%s/%s) allowed", r.URL.Path, q.Operation, q.Namespace, q.Name, q.Kind.Group, q.Kind.Kind)
		out := review{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview", Response: &reviewResponse{UID: q.UID, Allowed: true}}
		w.Header().Set("content-type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
	go func() {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
		<-sigs
		os.Exit(0)
	}()
	log.Printf("webhook: serving on %s", *listen)
	log.Fatal(http.ListenAndServeTLS(*listen, *cert, *key, mux))
}
