# Shared by the check scripts: sourced after setting `name` (the prefix of
# their messages).

log() { echo "$name: $*" >&2; }
fail() {
	log "FAIL: $*"
	exit 1
}

# go_tool MODULE PACKAGE VERSION BINARY: installs PACKAGE@VERSION with go
# install unless BINARY there was already built from MODULE at VERSION (the
# binaries' own --version may not say it exactly), and prints its path.
go_tool() {
	local module=$1 package=$2 version=$3 binary=$4 gobin
	gobin=$(go env GOBIN)
	[ -n "$gobin" ] || gobin=$(go env GOPATH)/bin
	if ! go version -m "$gobin/$binary" 2>/dev/null | grep -Eq "^[[:space:]]+mod[[:space:]]+$module[[:space:]]+$version[[:space:]]"; then
		log "installing $binary $version"
		GOFLAGS= go install "$package@$version" || fail "go install $package@$version"
	fi
	echo "$gobin/$binary"
}
