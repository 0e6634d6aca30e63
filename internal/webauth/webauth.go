// Package webauth helps with the exporter-toolkit web config that protects
// every endpoint: it tells whether basic auth is configured, and hashes a
// password for basic_auth_users so that nobody needs htpasswd for it.
package webauth

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.yaml.in/yaml/v2"
	"golang.org/x/crypto/bcrypt"
)

// Cost is the bcrypt cost of HashPassword, as htpasswd -B -C 10.
const Cost = 10

// BasicAuthConfigured reports whether the web config file (exporter-toolkit
// format) names at least one basic auth user. An empty path means no file.
func BasicAuthConfigured(path string) (bool, error) {
	if path == "" {
		return false, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("--web.config.file: %w", err)
	}
	var cfg struct {
		Users map[string]string `yaml:"basic_auth_users"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return false, fmt.Errorf("--web.config.file: %w", err)
	}
	return len(cfg.Users) > 0, nil
}

// HashPassword reads one password (its first line) from r and writes its
// bcrypt hash and a newline to w.
func HashPassword(r io.Reader, w io.Writer) error {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("reading the password: %w", err)
	}
	password := strings.TrimRight(line, "\r\n")
	if password == "" {
		return errors.New("empty password: type it on standard input")
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), Cost)
	if err != nil {
		return fmt.Errorf("hashing the password: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", hash)
	return err
}
