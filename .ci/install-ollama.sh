#!/usr/bin/env bash
# Installs Ollama v0.6.5 for the real-engine tests (plans/ollama_test.go),
# unless an ollama is already on PATH or in $(go env GOPATH)/bin.
# Idempotent and quiet: it prints one line, and the build log only on failure.
# The build is cgo (the machine's gcc/g++) and takes about 10 minutes on two
# cores; CI should cache $(go env GOPATH)/bin and the Go build cache.
set -euo pipefail

version=v0.6.5
gobin="$(go env GOPATH)/bin"

if command -v ollama >/dev/null 2>&1; then
	echo "== ollama: $(command -v ollama) (already installed)"
	exit 0
fi
if [ -x "$gobin/ollama" ]; then
	echo "== ollama: $gobin/ollama (already installed)"
	exit 0
fi

echo "== installing ollama $version with go install (cgo; several minutes)"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! CGO_ENABLED=1 go install "github.com/ollama/ollama@$version" >"$log" 2>&1; then
	echo "go install github.com/ollama/ollama@$version failed:" >&2
	tail -n 50 "$log" >&2
	exit 1
fi
echo "== ollama: $gobin/ollama"
