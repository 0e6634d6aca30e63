package server

import (
	"bytes"
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
