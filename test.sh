#!/usr/bin/env bash
# Installs what the tests need and runs them all: the README's test command,
# and what CI (.ci/run) runs. Idempotent: what is already installed is kept.
#
#   ./test.sh                 # every test, one package at a time
#   ./test.sh ./stages/...    # some packages
#
# Installs, when missing: Go modules, Chromium (Debian package; the report
# screenshot test), Ollama v0.17.4 (go install, with the Debian packages
# nlohmann-json3-dev and libstb-dev for its headers; the real-engine tests;
# reinstalled when the ollama the tests run is another version), llama-server
# (built with CMake from the llama.cpp release npm's node-llama-cpp carries,
# .ci/install-llama-server.sh; the llama-server tests), the
# npm package apache-arrow 21.2.0 into .cache/node (npm, and Node.js with
# it, from Debian when missing; the Arrow sink's independent-reader test),
# xmllint (Debian package libxml2-utils; the junit sink's schema test, which
# fails without it under CI=true), sshd (Debian package openssh-server; the
# SSH runner's tests start their own on a loopback port, never the
# machine's), kubectl (the client dry run of the rendered Kubernetes
# manifests; skipped with a note where no registry has it), buildah and
# busybox-static (Debian packages; e2e's TestImage builds the container image
# with scripts/build-image.sh and runs benchrun in it), the staticcheck linter
# (with BENCHRUN_LINT=1).
set -euo pipefail
cd "$(dirname "$0")"
export PATH="$PATH:/usr/local/go/bin:$(go env GOPATH)/bin"

go mod download

apt_install() {
	if [ "$(id -u)" = 0 ]; then
		apt-get update -qq >/dev/null
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
	else
		sudo apt-get update -qq >/dev/null
		sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
	fi
}

if ! command -v chromium >/dev/null 2>&1; then
	echo "== installing chromium (Debian package)"
	apt_install chromium
fi

if ! command -v xmllint >/dev/null 2>&1; then
	echo "== installing xmllint (Debian package libxml2-utils)"
	apt_install libxml2-utils
fi

if [ ! -x /usr/sbin/sshd ] && ! command -v sshd >/dev/null 2>&1; then
	echo "== installing sshd (Debian package openssh-server)"
	apt_install openssh-server
fi

# kubectl ships with this machine image (a package outside Debian's
# archive); where it is missing and no registry has it, the kubectl check
# is skipped (internal/k8s says so) rather than failing the whole run.
if ! command -v kubectl >/dev/null 2>&1; then
	echo "== installing kubectl (package kubectl)"
	apt_install kubectl || echo "== kubectl is not in the package registry: the manifests' kubectl dry run is skipped"
fi

# The image test: buildah builds the image (no daemon), and a static
# busybox is the image's /bin/sh.
if ! command -v buildah >/dev/null 2>&1 || ! command -v busybox >/dev/null 2>&1 || ldd "$(command -v busybox)" >/dev/null 2>&1; then
	echo "== installing buildah and busybox-static (Debian packages)"
	apt_install buildah busybox-static
fi

bash .ci/install-ollama.sh
bash .ci/install-llama-server.sh

# The Arrow sink's test reads its files with this independent Arrow
# implementation (sinks/arrow/testdata/read.mjs); .cache/ is git-ignored.
ARROW_JS_VERSION=21.2.0
if ! grep -qs "\"version\": \"$ARROW_JS_VERSION\"" .cache/node/node_modules/apache-arrow/package.json; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "== installing npm and Node.js (Debian packages)"
		apt_install npm
	fi
	echo "== installing apache-arrow@$ARROW_JS_VERSION (npm, into .cache/node)"
	npm install --prefix .cache/node --no-audit --no-fund --loglevel=error "apache-arrow@$ARROW_JS_VERSION" >/dev/null
fi

if [ "${BENCHRUN_LINT:-}" = 1 ]; then
	echo "== gofmt, go vet, staticcheck"
	unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
	if [ -n "$unformatted" ]; then
		echo "gofmt would change:"
		echo "$unformatted"
		exit 1
	fi
	go vet ./...
	command -v staticcheck >/dev/null 2>&1 || go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
	staticcheck ./...
fi

echo "== tests"
# The real-engine tests (Ollama serving testdata/models/stories260K.gguf)
# fail rather than skip when what they need is missing: this script
# installed it.
export BENCHRUN_REQUIRE_ENGINES=1
# One package at a time: several tests measure latency, and two packages
# at once on a small machine measure each other.
if [ $# -eq 0 ]; then
	set -- ./...
fi
go test -p 1 -timeout 45m "$@"
