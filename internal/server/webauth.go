// This file guards every endpoint with the basic auth of the
// exporter-toolkit web config (--web.config.file): a front ahead of the
// toolkit that fails closed and cannot be starved by wrong passwords
// (AuthFront), and a bcrypt hasher for basic_auth_users so that nobody needs
// htpasswd for it.

package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// Cost is the bcrypt cost of HashPassword, as htpasswd -B -C 10.
const Cost = 10

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
