package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKeyExpiryFromFileAndFlag: api_key_expires (per organization) and
// --mintlify.api-key-expires give the same value through the one builder;
// a date is the start of that day in UTC, an RFC 3339 time keeps its
// instant; left out, there is none.
func TestKeyExpiryFromFileAndFlag(t *testing.T) {
	cfg, err := Parse("c.yml", []byte(`organizations:
  - name: acme
    api_key_env: ACME_KEY
    api_key_expires: 2027-02-24
  - name: beta
    api_key_env: BETA_KEY
    api_key_expires: "2027-03-01T09:30:00+02:00"
  - name: gamma
    api_key_env: GAMMA_KEY
projects:
  - {id: a, organization: acme}
`), 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Time{
		"acme":  time.Date(2027, 2, 24, 0, 0, 0, 0, time.UTC),
		"beta":  time.Date(2027, 3, 1, 7, 30, 0, 0, time.UTC),
		"gamma": {},
	}
	for _, o := range cfg.Organizations {
		if !o.APIKeyExpires.Equal(want[o.Name]) {
			t.Errorf("organization %s: expires %v, want %v", o.Name, o.APIKeyExpires, want[o.Name])
		}
	}

	fromFlag, err := parse(t, "--mintlify.project=p", "--mintlify.api-key-expires=2027-02-24")
	if err != nil {
		t.Fatal(err)
	}
	if got := fromFlag.Organizations[0].APIKeyExpires; !got.Equal(want["acme"]) {
		t.Errorf("--mintlify.api-key-expires=2027-02-24: %v, want %v", got, want["acme"])
	}
	fromFlag, err = parse(t, "--mintlify.project=p", "--mintlify.api-key-expires=2027-03-01T07:30:00Z")
	if err != nil || !fromFlag.Organizations[0].APIKeyExpires.Equal(want["beta"]) {
		t.Errorf("--mintlify.api-key-expires with a time: %v, %v", fromFlag, err)
	}
	if none, err := parse(t, "--mintlify.project=p"); err != nil || !none.Organizations[0].APIKeyExpires.IsZero() {
		t.Errorf("no flag: %v, %v, want no expiry", none, err)
	}
}

// TestBadKeyExpiryNamesTheKeyOrFlag: a value that is neither a date nor an
// RFC 3339 time is a problem naming the key with its line (beside the
// file's other problems) or the flag, and saying what is expected.
func TestBadKeyExpiryNamesTheKeyOrFlag(t *testing.T) {
	for _, bad := range []string{"2027-02-30", "24.02.2027", "90d", "2027-02-24T09:30:00", "2027-02-24 09:30:00", "tomorrow"} {
		_, err := Parse("c.yml", []byte(`organizations:
  - name: acme
    api_key_env: K
    api_key_expires: "`+bad+`"
    analytics_budget: 0
projects: [{id: p}]
`), 5*time.Minute)
		if err == nil {
			t.Errorf("api_key_expires %q: no error", bad)
			continue
		}
		want := `c.yml:4: organizations[0].api_key_expires: invalid expiry "` + bad + `": want a date (2027-02-24`
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "RFC 3339") {
			t.Errorf("api_key_expires %q: %v\nwant a line starting %q", bad, err, want)
		}
		if !strings.Contains(err.Error(), "organizations[0].analytics_budget: ") {
			t.Errorf("api_key_expires %q hides the file's other problem:\n%v", bad, err)
		}

		_, err = parse(t, "--mintlify.project=p", "--mintlify.api-key-expires="+bad)
		if err == nil || !strings.HasPrefix(err.Error(), `--mintlify.api-key-expires: invalid expiry "`+bad+`"`) || strings.Contains(err.Error(), "organizations[") {
			t.Errorf("--mintlify.api-key-expires=%s: %v", bad, err)
		}
	}
	// A typo of the key is told with the key meant.
	_, err := Parse("c.yml", []byte("organizations: [{name: a, api_key_env: K, api_key_expire: 2027-02-24}]\nprojects: [{id: p}]\n"), 5*time.Minute)
	if err == nil || !strings.Contains(err.Error(), `unknown key "api_key_expire" in organizations[0]; did you mean "api_key_expires"?`) {
		t.Errorf("typo of api_key_expires: %v", err)
	}
}

// TestKeyExpiryFlagBesideConfigFile: like every organization flag, it is
// refused beside --config.file, whose organizations carry their own.
func TestKeyExpiryFlagBesideConfigFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.yml")
	if err := os.WriteFile(file, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := parse(t, "--config.file="+file, "--mintlify.api-key-expires=2027-02-24")
	if err == nil || !strings.HasPrefix(err.Error(), "--mintlify.api-key-expires: not with --config.file") {
		t.Errorf("--mintlify.api-key-expires beside --config.file: %v", err)
	}
}
