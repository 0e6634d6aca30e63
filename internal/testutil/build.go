package testutil

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// BinEnv names an already built exporter binary for the tests to run
// instead of building one (a CI step that built it once, or a debugger's).
const BinEnv = "MINTLIFY_EXPORTER_TEST_BIN"

var shared struct {
	once sync.Once
	bin  string
	err  error
}

// ExporterBinary returns the path of the exporter built from this checkout's
// sources, building it at most once per change of the sources: the binary
// lives in the user's cache directory under a hash of every non-test Go file,
// go.mod, go.sum and the Go version, and a lock file there makes the packages
// that `go test ./...` runs in parallel wait for one build instead of racing
// to link their own. $MINTLIFY_EXPORTER_TEST_BIN, when set, is used as it is.
func ExporterBinary() (string, error) {
	shared.once.Do(func() {
		if p := os.Getenv(BinEnv); p != "" {
			if _, err := os.Stat(p); err != nil {
				shared.err = fmt.Errorf("$%s: %w", BinEnv, err)
				return
			}
			shared.bin = p
			return
		}
		shared.bin, shared.err = buildShared()
	})
	return shared.bin, shared.err
}

// ModuleRoot is the directory of the exporter's go.mod.
func ModuleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func buildShared() (string, error) {
	root := ModuleRoot()
	key, err := sourceHash(root)
	if err != nil {
		return "", fmt.Errorf("hashing the exporter's sources: %w", err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	base := filepath.Join(cache, "mintlify_exporter-test")
	dir := filepath.Join(base, key[:16])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	// Released when lock is closed (and by the kernel if this process dies).
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	bin := filepath.Join(dir, "mintlify_exporter")
	now := time.Now()
	if _, err := os.Stat(bin); err == nil {
		_ = os.Chtimes(dir, now, now) // used: kept by prune
		return bin, nil
	}
	tmp := bin + ".tmp"
	cmd := exec.Command("go", "build", "-o", tmp, ".")
	cmd.Dir = root
	if out, err := CombinedOutput(cmd); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	prune(base, dir)
	return bin, nil
}

// prune removes binaries of other sources that no test used for a day, so
// that the cache holds a few binaries, not one per edit ever made.
func prune(base, keep string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(base, e.Name())
		if info, err := e.Info(); err == nil && p != keep && time.Since(info.ModTime()) > 24*time.Hour {
			_ = os.RemoveAll(p)
		}
	}
}

// listFormat prints, for every package of this module the binary is built
// from, its directory and the files go build reads (Go and embedded files).
const listFormat = `{{if .Module}}{{if .Module.Main}}{{.Dir}}{{range .GoFiles}}{{"\t"}}{{.}}{{end}}` +
	`{{range .CgoFiles}}{{"\t"}}{{.}}{{end}}{{range .EmbedFiles}}{{"\t"}}{{.}}{{end}}{{"\n"}}{{end}}{{end}}`

// sourceHash hashes what the binary is built from, as go list names it: the
// Go and embedded files of every package of this module the binary imports,
// go.mod and go.sum (which pin the rest), the Go version and the environment
// that changes a build.
func sourceHash(root string) (string, error) {
	files, err := sourceFiles(root)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s %s/%s GOFLAGS=%s CGO_ENABLED=%s GOEXPERIMENT=%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH,
		os.Getenv("GOFLAGS"), os.Getenv("CGO_ENABLED"), os.Getenv("GOEXPERIMENT"))
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		rel, _ := filepath.Rel(root, path)
		fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(rel), len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// sourceFiles lists the files sourceHash reads.
func sourceFiles(root string) ([]string, error) {
	cmd := exec.Command("go", "list", "-deps", "-f", listFormat, ".")
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := Output(cmd)
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	files := []string{filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum")}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Split(line, "\t")
		for _, f := range fields[1:] {
			files = append(files, filepath.Join(fields[0], f))
		}
	}
	return files, nil
}
