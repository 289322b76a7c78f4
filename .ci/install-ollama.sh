#!/usr/bin/env bash
# Installs Ollama v0.17.4 for the real-engine tests (plans/ollama_test.go and
# the other tests that find an ollama the same way), into $(go env GOPATH)/bin,
# unless the ollama the tests will run (the first on PATH, else the one in
# $(go env GOPATH)/bin) already is that version. Idempotent and quiet: it
# prints one line, and the build log only on failure.
#
# The build is `go install` of the Go module, cgo with the machine's gcc/g++:
# about 10 minutes on two cores from nothing (9.6 CPU-minutes, the
# module downloads included), then cached (CI should keep
# $(go env GOPATH)/bin and the Go build cache). The module leaves out
# llama.cpp's header-only libraries: nlohmann/json and stb_image come from
# Debian (nlohmann-json3-dev, libstb-dev; installed here when missing),
# miniaudio from third_party/miniaudio (on CGO_CPPFLAGS).
#
# A `go install`ed Ollama says it is version 0.0.0 (its version is set by
# the release build's linker flags); this build sets it the same way
# (-X .../version.Version), so `ollama --version`, and so the rows'
# engine_version, give the real version. `go version -m` on the binary
# names the module version too.
set -euo pipefail
cd "$(dirname "$0")/.."

version=v0.17.4
gobin="$(go env GOPATH)/bin"

# ollama_version BIN prints the version BIN says it is: its client version,
# asked with no server to answer (a closed port), as benchrun asks it.
ollama_version() {
	OLLAMA_HOST=127.0.0.1:9 "$1" --version 2>&1 | sed -n 's/^.*client version is \([^ ]*\).*$/\1/p' | tail -n 1
}

bin="$(command -v ollama || true)"
[ -n "$bin" ] || bin="$gobin/ollama"
if [ -x "$bin" ] && [ "$(ollama_version "$bin")" = "${version#v}" ]; then
	echo "== ollama: $bin ${version#v} (already installed)"
	exit 0
fi
if [ -x "$bin" ]; then
	echo "== ollama: $bin is version $(ollama_version "$bin" || true), not ${version#v}: installing ${version#v}"
fi

if [ ! -f /usr/include/nlohmann/json.hpp ] || [ ! -f /usr/include/stb/stb_image.h ]; then
	echo "== installing nlohmann-json3-dev and libstb-dev (Debian packages; headers Ollama's build needs)"
	sudo=""
	[ "$(id -u)" = 0 ] || sudo=sudo
	$sudo apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nlohmann-json3-dev libstb-dev >/dev/null
fi

echo "== installing ollama $version with go install (cgo; several minutes)"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! CGO_ENABLED=1 CGO_CPPFLAGS="${CGO_CPPFLAGS:-} -I$PWD/third_party/miniaudio/include" \
	go install -ldflags "-X github.com/ollama/ollama/version.Version=${version#v}" \
	"github.com/ollama/ollama@$version" >"$log" 2>&1; then
	echo "go install github.com/ollama/ollama@$version failed:" >&2
	tail -n 50 "$log" >&2
	exit 1
fi
if [ "$(ollama_version "$gobin/ollama")" != "${version#v}" ]; then
	echo "$gobin/ollama does not say it is version ${version#v}" >&2
	exit 1
fi
if [ "$(command -v ollama || true)" != "" ] && [ "$(command -v ollama)" != "$gobin/ollama" ]; then
	echo "== ollama: $gobin/ollama ${version#v}; warning: $(command -v ollama) comes first on PATH, and the tests run that one"
	exit 0
fi
echo "== ollama: $gobin/ollama ${version#v}"
