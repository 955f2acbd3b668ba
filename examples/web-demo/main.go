// Command web-demo is the small HTTP server of berth's demo (`make run`): the process
// application in examples/web-process.yaml downloads it as a package, starts three
// instances on random ports and checks their health.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	port := flag.Int("port", 8080, "port to listen on")
	pidFile := flag.String("pidfile", "", "file to write the pid to")
	www := flag.String("www", "www", "directory served at /")
	flag.Parse()
	if *pidFile != "" {
		if err := os.MkdirAll(filepath.Dir(*pidFile), 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(*pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	var failing atomic.Bool // set by POST /fail: the health check then fails (for demos and tests)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if failing.Load() {
			http.Error(w, "failing on purpose", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("POST /fail", func(w http.ResponseWriter, _ *http.Request) { failing.Store(true) })
	mux.HandleFunc("GET /env", func(w http.ResponseWriter, _ *http.Request) {
		for _, kv := range os.Environ() {
			fmt.Fprintln(w, kv)
		}
	})
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "%s (pid %d, port %d)\n", os.Getenv("GREETING"), os.Getpid(), *port)
	})
	mux.Handle("GET /", http.FileServer(http.Dir(*www)))
	srv := &http.Server{Addr: fmt.Sprintf(":%d", *port), Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	log.Printf("web-demo listening on :%d", *port)
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
