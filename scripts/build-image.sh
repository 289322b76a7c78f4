#!/usr/bin/env bash
# Builds the benchrun container image from this checkout with buildah,
# pulling no base image (docs/SCALE.md, "The image"):
#
#   scripts/build-image.sh            # prints the image's name: localhost/benchrun:TAG
#
# TAG is benchrun's version as the binary says it (`benchrun version`), with
# what a tag cannot hold made '-' (k8s.ImageTag, the rule `benchrun k8s render`
# names its default image by): v0.0.0-<date>-<commit>, -dirty with uncommitted
# changes, devel outside a git checkout.
#
# The image holds benchrun built with cgo as `go build` builds it here (its GPU
# telemetry opens NVML at run time, a cgo call), the dynamic loader and C
# library it links, copied from this machine, busybox (Debian's
# busybox-static: /bin/sh and the tools the Kubernetes Jobs' scripts use),
# CA certificates (HTTPS sinks) and plans/*.cue under /usr/share/benchrun/plans.
#
# buildah runs as it is configured: where overlay mounts fail (inside a
# container) give STORAGE_DRIVER=vfs, as the tests do. Needs go, buildah and
# busybox-static (apt-get install buildah busybox-static).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

for need in go buildah ldd busybox; do
	if ! command -v "$need" >/dev/null 2>&1; then
		echo "build-image: $need is missing (apt-get install buildah busybox-static)" >&2
		exit 2
	fi
done
# A static busybox (it runs with no library in the image): ldd refuses it.
busybox=$(command -v busybox)
if ldd "$busybox" >/dev/null 2>&1; then
	echo "build-image: $busybox is linked dynamically: install busybox-static" >&2
	exit 2
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
root="$ctx/rootfs"
mkdir -p "$root/usr/local/bin" "$root/bin" "$root/usr/share/benchrun/plans" "$root/etc/ssl/certs" "$root/root" "$root/work"
chmod 1777 "$root/work"
mkdir -m 1777 "$root/tmp"

# -buildvcs=true over a GOFLAGS that turns it off: the version (and so the
# tag) comes from the commit; outside a git checkout there is none (devel).
buildvcs=false
if git rev-parse --git-dir >/dev/null 2>&1; then
	buildvcs=true
fi
go build -buildvcs=$buildvcs -o "$root/usr/local/bin/benchrun" ./cmd/benchrun
version=$("$root/usr/local/bin/benchrun" version | awk '{print $2}')
tag=$(printf '%s' "$version" | tr -c 'A-Za-z0-9_.-' '-' | sed 's/^[-.]*//; s/-*$//' | cut -c1-128)
tag=${tag:-devel}
image="localhost/benchrun:$tag"

# The loader and libraries the binary links, at the paths it asks for, and
# beside the C library the parts of it NVIDIA's libnvidia-ml links (the
# container toolkit mounts the driver's libraries, never the C library's).
ldd "$root/usr/local/bin/benchrun" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | while read -r lib; do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
	if [ "$(basename "$lib")" = libc.so.6 ]; then
		for part in libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1; do
			if [ -e "$(dirname "$lib")/$part" ]; then
				cp -L "$(dirname "$lib")/$part" "$root$(dirname "$lib")/"
			fi
		done
	fi
done

cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
	[ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
	cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
fi
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
cp plans/*.cue "$root/usr/share/benchrun/plans/"
cp Containerfile "$ctx/"

buildah build --quiet --layers=false --build-arg VERSION="$version" -f "$ctx/Containerfile" -t "$image" "$ctx" >/dev/null
echo "$image"
