// Command fakeapi serves the fake Mintlify API on loopback, without the
// analytics quota, for measurements at scale (BENCHMARKS.md):
//
//	go run ./internal/fakeapi/cmd/fakeapi -addr 127.0.0.1:9872 -paths 10000
//
// Any key with the mint_ prefix and any project id are accepted.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9872", "listen address (keep it on loopback)")
	paths := flag.Int("paths", 10000, "pages per project")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	url, wait, err := fakeapi.New(fakeapi.Options{Paths: *paths}).Serve(ctx, *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(url)
	if err := wait(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
