package webauth

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

func TestHashPassword(t *testing.T) {
	var out bytes.Buffer
	if err := HashPassword(strings.NewReader("s3cret pass\n"), &out); err != nil {
		t.Fatal(err)
	}
	hash := strings.TrimSuffix(out.String(), "\n")
	if err := bcrypt.CompareHashAndPassword([]byte(hash), []byte("s3cret pass")); err != nil {
		t.Errorf("hash %q does not match the password: %v", hash, err)
	}
	if cost, _ := bcrypt.Cost([]byte(hash)); cost != Cost {
		t.Errorf("cost %d, want %d", cost, Cost)
	}
	if err := HashPassword(strings.NewReader("\n"), &out); err == nil {
		t.Error("an empty password was hashed")
	}
}

func TestBasicAuthConfigured(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"", false},
		{write("tls.yml", "tls_server_config:\n  cert_file: a\n  key_file: b\n"), false},
		{write("auth.yml", "basic_auth_users:\n  bot: $2y$10$abc\n"), true},
	} {
		got, err := BasicAuthConfigured(tc.path)
		if err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.path, got, err, tc.want)
		}
	}
	if _, err := BasicAuthConfigured(write("bad.yml", "basic_auth_users: [")); err == nil {
		t.Error("a broken web config was read")
	}
}
