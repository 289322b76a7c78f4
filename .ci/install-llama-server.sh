#!/usr/bin/env bash
# Installs llama-server for the real-engine tests (plans/llama_server_test.go,
# stages/sweep's reset_cache test), into $(go env GOPATH)/bin, unless the
# llama-server there already is this build. Idempotent and quiet: one line,
# and the build log only on failure.
#
# Debian bookworm packages no llama.cpp, and no release binary can be
# downloaded where CI runs (Go modules, Debian packages and npm only). The
# npm package node-llama-cpp carries a llama.cpp release as a git bundle
# (llama/gitRelease.bundle; 3.21.1 carries commit 80fb11a, ggml 0.23.0,
# MIT licence): it is fetched with `npm pack`, cloned from the bundle and
# its llama-server target alone built with CMake (Debian's cmake; CPU only,
# no curl, no UI), about 10 minutes on two cores, then kept.
set -euo pipefail
cd "$(dirname "$0")/.."

pkg=node-llama-cpp@3.21.1
commit=80fb11a
gobin="$(go env GOPATH)/bin"
bin="$gobin/llama-server"

if [ -x "$bin" ] && "$bin" --version 2>&1 | grep -q "commit $commit)"; then
	echo "== llama-server: $bin ($commit, already installed)"
	exit 0
fi

need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v g++ >/dev/null 2>&1 || need+=(g++)
if [ ${#need[@]} -gt 0 ]; then
	echo "== installing ${need[*]} (Debian packages; llama-server's build)"
	sudo=""
	[ "$(id -u)" = 0 ] || sudo=sudo
	$sudo apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

echo "== building llama-server ($commit) from npm's $pkg (CMake; several minutes)"
work="$(mktemp -d)"
log="$work/build.log"
trap 'rm -rf "$work"' EXIT
fail() {
	echo "llama-server build failed ($1):" >&2
	tail -n 50 "$log" >&2
	exit 1
}
(cd "$work" && npm pack --silent "$pkg" >"$log" 2>&1) || fail "npm pack $pkg"
tar -xzf "$work"/node-llama-cpp-*.tgz -C "$work" package/llama/gitRelease.bundle || fail "unpacking"
git clone -q "$work/package/llama/gitRelease.bundle" "$work/llama.cpp" >>"$log" 2>&1 || fail "git clone of the bundle"
cmake -S "$work/llama.cpp" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
	-DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
	-DLLAMA_BUILD_UI=OFF -DGGML_NATIVE=OFF -DGGML_OPENMP=OFF >>"$log" 2>&1 || fail "cmake configure"
cmake --build "$work/build" --target llama-server -j "$(nproc)" >>"$log" 2>&1 || fail "cmake build"
mkdir -p "$gobin"
install -m 0755 "$work/build/bin/llama-server" "$bin"
cp "$work/llama.cpp/LICENSE" "$gobin/llama-server.LICENSE" 2>/dev/null || true
echo "== llama-server: $bin ($("$bin" --version 2>&1 | grep -m1 version || true))"
