package server

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v2"
	"golang.org/x/crypto/bcrypt"

	"github.com/mintlify-exporter/mintlify_exporter/internal/secrets"
)

// maxConfigBytes bounds a read of the web config file: it holds a few
// users and TLS file names (or at most a PEM key inline).
const maxConfigBytes = 1 << 20

// webConfig is one version of --web.config.file as the front applies it.
type webConfig struct {
	// raw is the file's content, to tell a change from a re-read.
	raw []byte
	// users are basic_auth_users: user -> bcrypt hash.
	users map[string]string
}

// readConfig reads the web config file, at most maxConfigBytes.
func readConfig(path string) ([]byte, error) {
	return secrets.ReadAtMost(path, maxConfigBytes)
}

// parseConfig reads the users of a web config and derives from it the
// config exporter-toolkit is given: the same without basic_auth_users
// (the front checks them), relative TLS file names made absolute against
// the original's directory (the derived file lives elsewhere). The derived
// config is written to derivedPath and validated there by the toolkit's
// own Validate (strict keys, headers, certificates) before it replaces the
// one in use, so that a bad edit never reaches the server.
func parseConfig(path string, raw []byte, derivedPath string) (*webConfig, error) {
	var users struct {
		Users map[string]string `yaml:"basic_auth_users"`
	}
	if err := yaml.Unmarshal(raw, &users); err != nil {
		return nil, err
	}
	for user, hash := range users.Users {
		if _, err := bcrypt.Cost([]byte(hash)); err != nil {
			return nil, fmt.Errorf("basic_auth_users: %s: not a bcrypt hash: %w", user, err)
		}
	}
	var doc yaml.MapSlice
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	derived := make(yaml.MapSlice, 0, len(doc))
	for _, item := range doc {
		switch item.Key {
		case "basic_auth_users":
			continue
		case "tls_server_config":
			tls, ok := item.Value.(yaml.MapSlice)
			if !ok {
				break
			}
			abs := slices.Clone(tls)
			for i, f := range abs {
				name, isString := f.Value.(string)
				switch f.Key {
				case "cert_file", "key_file", "client_ca_file":
					if isString && name != "" && !filepath.IsAbs(name) {
						abs[i].Value = filepath.Join(filepath.Dir(path), name)
					}
				}
			}
			item.Value = abs
		}
		derived = append(derived, item)
	}
	out, err := yaml.Marshal(derived)
	if err != nil {
		return nil, err
	}
	if len(derived) == 0 {
		out = nil // "{}" would be a valid but odd file; empty is the same
	}
	if err := writeAtomic(derivedPath, out, web.Validate); err != nil {
		return nil, err
	}
	return &webConfig{raw: bytes.Clone(raw), users: users.Users}, nil
}

// writeAtomic writes data to a temporary file next to path, checks it
// with validate, and renames it over path: a reader (the toolkit re-reads
// the file on each TLS handshake) sees the old file or the new one.
func writeAtomic(path string, data []byte, validate func(string) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".candidate-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	err = errors.Join(err, f.Close())
	if err == nil {
		err = validate(tmp)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}
