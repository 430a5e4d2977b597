#!/bin/sh
# stage-runtime.sh BINARY ROOTFS: lays out what a kturn image needs on top of
# gcr.io/distroless/cc-debian12 under ROOTFS, for one `COPY --from=build ROOTFS/ /`:
#
#   ROOTFS/usr/local/bin/<binary>          stripped
#   ROOTFS/usr/lib/<multiarch>/<soname>    every shared library the binary loads that the
#                                          runtime image lacks (spdlog, fmt, yaml-cpp today)
#
# Why distroless and not debian:12-slim plus `apt-get install libyaml-cpp0.7 ...`: no shell,
# no package manager and no setuid binaries in the image, and a fraction of the size; what it
# costs is this script. The runtime image (cc-debian12) has glibc, libgcc_s, libstdc++,
# libgomp and OpenSSL 3 (libssl3); everything else ldd resolves is copied from this (Debian 12)
# build stage, so the image runs the very library builds the binary was linked against. The
# libraries go to the multiarch directory, which the dynamic loader searches by default: no
# LD_LIBRARY_PATH, no RPATH. A library ldd cannot resolve fails the build here rather than the
# container at start.
set -eu

binary=$1
rootfs=$2
multiarch=$(gcc -print-multiarch)

# Sonames of the runtime image's own libraries (distroless cc-debian12: libc6, libgcc-s1,
# libstdc++6, libgomp1, libssl3).
provided='^(linux-vdso|linux-gate|ld-linux[^ ]*|libc|libm|libdl|libpthread|librt|libresolv'
provided="$provided|libutil|libgcc_s|libstdc\+\+|libgomp|libssl|libcrypto)\.so"

mkdir -p "$rootfs/usr/local/bin" "$rootfs/usr/lib/$multiarch"
install -m 0755 "$binary" "$rootfs/usr/local/bin/"
strip --strip-unneeded "$rootfs/usr/local/bin/$(basename "$binary")"

if ldd "$binary" | grep -q 'not found'; then
  ldd "$binary" >&2
  echo "stage-runtime.sh: $binary: unresolved shared libraries" >&2
  exit 1
fi
ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' |
  while read -r soname path; do
    if echo "$soname" | grep -Eq "$provided"; then
      continue
    fi
    cp -L "$path" "$rootfs/usr/lib/$multiarch/$soname"
    echo "stage-runtime.sh: bundling $soname ($path)"
  done
