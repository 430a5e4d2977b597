#!/usr/bin/env bash
# Builds kturn's images (kturnd, kturn-operator, kturn-auth) from their own Dockerfiles
# (deploy/docker/) with buildah, without Docker and without a registry, plus the end-to-end tests'
# media servers (tests/e2e/media-echo.Containerfile: a UDP echo; tests/e2e/janus.Containerfile:
# Janus, for the multi-node test's WebRTC calls) and pod sandbox image
# (tests/e2e/pause.Containerfile); exports each as an OCI archive that `ctr images import`
# (containerd, hence a kubelet) loads.
#
#   scripts/build-images.sh [--tag TAG] [--out DIR] [--import-to SOCKET] [--refresh-base]
#                           [--verbose] [IMAGE...]
#
# IMAGE is kturnd, kturn-operator, kturn-auth, media-echo, janus or pause (default: all six). TAG
# defaults to the chart's appVersion (deploy/helm/kturn/Chart.yaml), and the names are the
# chart's default repositories, so a chart installed with its defaults runs what this built:
# kturn/kturnd:TAG is tagged docker.io/kturn/kturnd:TAG, the name a kubelet looks up for the
# chart's "kturn/kturnd".
# DIR (default build/images) receives one archive per image, <image>_<TAG>.oci.tar, and
# images.tsv: image name, archive file, image id, one image a line, kept across runs and tags.
# --import-to SOCKET imports each archive into the containerd at SOCKET (namespace k8s.io, the
# kubelet's). --refresh-base remakes the base images (for Debian's security updates; everything
# built on them then rebuilds). Each step's time is printed, and a summary at the end.
#
# The Dockerfiles' base images, debian:12 and gcr.io/distroless/cc-debian12:nonroot, are pulled
# from no registry: this script makes stand-ins from Debian packages and passes them as the
# build arguments BUILD_IMAGE and RUNTIME_IMAGE (the Dockerfiles' defaults stay the real ones):
#
#   localhost/kturn-base/debian:12           debootstrap --variant=minbase bookworm, with
#                                            bookworm, bookworm-updates and bookworm-security
#                                            in its apt sources and upgraded from them
#   localhost/kturn-base/cc-debian12:nonroot the files of libc6, libgcc-s1, libgomp1, libstdc++6,
#                                            libssl3 and netbase from that root, its CA bundle,
#                                            passwd/group with nonroot (65532), USER 65532; see
#                                            make_runtime_base for how it differs from distroless
#
# Each carries the hash of the functions and settings that make it (label
# io.kturn.base-recipe) and is remade only when that changes, or with --refresh-base; the kturn
# images build with --layers, so a second run costs a few cache checks (about 5 s; the first,
# about 8 minutes on two cores, compiles kturn once: the three Dockerfiles share their build
# stage). Must run as root (debootstrap, buildah mount). Every buildah run and build has a
# --network: the host's (--network host) where apt needs the mirror, none otherwise. Without one
# buildah's netavark adds a bridge and iptables chains, and turns on IPv4 forwarding, on a
# machine that may be running the test cluster.
#
# Environment: KTURN_DEBIAN_MIRROR (default http://deb.debian.org/debian),
# KTURN_DEBIAN_SECURITY_MIRROR (default http://deb.debian.org/debian-security), KTURN_IMAGES_CACHE
# (debootstrap's download cache and the lock, default ~/.cache/kturn-images), BUILDAH_ISOLATION
# (default oci; chroot where runc cannot run), KTURN_CTR_NAMESPACE (default k8s.io),
# KTURN_CTR_SNAPSHOTTER (ctr's --snapshotter; default: containerd's own).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)

# The chart's image repositories (deploy/helm/kturn/values.yaml: dataplane.image.repository,
# operator.image.repository, auth.image.repository; tests/deploy/dockerfile_test.py checks).
declare -A repository=(
  [kturnd]=kturn/kturnd
  [kturn-operator]=kturn/kturn-operator
  [kturn-auth]=kturn/kturn-auth
  [media-echo]=kturn-e2e/media-echo
  [janus]=kturn-e2e/janus
  [pause]=kturn-e2e/pause
)
all_images=(kturnd kturn-operator kturn-auth media-echo janus pause)

suite=bookworm
mirror=${KTURN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security_mirror=${KTURN_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
cache=${KTURN_IMAGES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kturn-images}
isolation=${BUILDAH_ISOLATION:-oci}
ctr_namespace=${KTURN_CTR_NAMESPACE:-k8s.io}
ctr_snapshotter=${KTURN_CTR_SNAPSHOTTER:-}
debian_image=localhost/kturn-base/debian:12
runtime_image=localhost/kturn-base/cc-debian12:nonroot
recipe_label=io.kturn.base-recipe
path_env=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# What the runtime base holds of Debian's packages (distroless cc-debian12's, tzdata aside).
runtime_packages=(libc6 libgcc-s1 libgomp1 libstdc++6 libssl3 netbase)

tag=$(sed -n 's/^appVersion: *"\{0,1\}\([^" ]*\)"\{0,1\} *$/\1/p' \
        "$top/deploy/helm/kturn/Chart.yaml")
out=$top/build/images
import_to=""
refresh_base=0
verbose=0
images=()
usage() {
  echo "usage: $0 [--tag TAG] [--out DIR] [--import-to SOCKET] [--refresh-base] [--verbose]" \
       "[IMAGE...]   (IMAGE: ${all_images[*]})" >&2
  exit 2
}
while (($#)); do
  case "$1" in
    --tag) tag=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --import-to) import_to=${2:?}; shift 2 ;;
    --refresh-base) refresh_base=1; shift ;;
    --verbose) verbose=1; shift ;;
    -h|--help) usage ;;
    -*) usage ;;
    *) [ -n "${repository[$1]:-}" ] || usage; images+=("$1"); shift ;;
  esac
done
((${#images[@]})) || images=("${all_images[@]}")
[ -n "$tag" ] || { echo "build-images: no --tag and no appVersion in Chart.yaml" >&2; exit 2; }
mkdir -p "$out" "$cache"
out=$(cd "$out" && pwd)

say() { echo "build-images: $*" >&2; }

[ "$(id -u)" = 0 ] || { say "must run as root (debootstrap, buildah mount)"; exit 1; }
for tool in buildah debootstrap tar sha256sum flock ${import_to:+ctr}; do
  command -v "$tool" >/dev/null || { say "$tool is not installed"; exit 1; }
done

# One run at a time: two would make the same base image at once.
exec 9>"$cache/.lock"
flock 9

# --- bookkeeping: timings, logs, working containers ------------------------------------------

timings=()
now_ms() { local t=${EPOCHREALTIME//[.,]/}; echo $((10#$t / 1000)); }
# timed LABEL COMMAND...: runs COMMAND, logs and records how long it took.
timed() {
  local label=$1 start
  shift
  start=$(now_ms)
  "$@"
  local ms=$(($(now_ms) - start))
  timings+=("$(printf '%-46s %6d.%01d s' "$label" $((ms / 1000)) $((ms % 1000 / 100)))")
  say "$label: $((ms / 1000)).$((ms % 1000 / 100)) s"
}

mkdir -p "$out/logs"
# logged NAME COMMAND...: runs COMMAND with its output in $out/logs/NAME.log (and on the
# terminal with --verbose); on failure the log's tail is shown.
logged() {
  local log=$out/logs/$1.log
  shift
  local rc=0
  if ((verbose)); then
    "$@" 2>&1 | tee "$log" || rc=$?
  else
    "$@" >"$log" 2>&1 || rc=$?
  fi
  if ((rc)); then
    tail -n 40 "$log" >&2
    say "failed (exit $rc), full log: $log"
    exit "$rc"
  fi
}

containers=()
cleanup() {
  local c
  for c in "${containers[@]}"; do
    buildah rm "$c" >/dev/null 2>&1 || true
  done
}
trap cleanup EXIT
# new_container IMAGE: a buildah working container in $container, removed when the script exits.
new_container() {
  container=$(buildah from --pull=never --quiet "$1")
  containers+=("$container")
}

# --- base images -------------------------------------------------------------------------------

# recipe_of FUNCTION... -- VALUE...: the cache key of a base image, the hash of the bash source
# of the functions that make it and of the settings they use.
recipe_of() {
  local functions=()
  while [ "$1" != -- ]; do functions+=("$1"); shift; done
  shift
  { declare -f "${functions[@]}"; printf '%s\n' "$@"; } | sha256sum | cut -c1-16
}

# has_recipe IMAGE KEY: whether buildah's storage holds IMAGE made by the recipe KEY.
has_recipe() {
  local found
  found=$(buildah inspect --type image --format "{{index .OCIv1.Config.Labels \"$recipe_label\"}}" \
            "$1" 2>/dev/null) || return 1
  [ "$found" = "$2" ]
}

debian_sources() {
  cat <<EOF
Types: deb
URIs: $mirror
Suites: $suite $suite-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security_mirror
Suites: $suite-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
}

# Debian 12 as the debian:12 image has it: a minbase debootstrap (merged /usr) upgraded from
# bookworm-updates and bookworm-security, with no device nodes, no host name, resolv.conf or
# downloaded package, CMD bash. The .debs stay in $cache/debs for the next debootstrap.
make_debian_base() {
  local key=$1 ctr mnt
  new_container scratch
  ctr=$container
  mnt=$(buildah mount "$ctr")
  mkdir -p "$cache/debs"
  logged debootstrap debootstrap --variant=minbase --cache-dir="$cache/debs" "$suite" "$mnt" \
    "$mirror"
  rm -f "$mnt/etc/apt/sources.list"
  debian_sources >"$mnt/etc/apt/sources.list.d/debian.sources"
  find "$mnt/dev" -mindepth 1 -delete
  : >"$mnt/etc/resolv.conf"
  rm -f "$mnt/etc/hostname" "$mnt/var/log/bootstrap.log" "$mnt"/var/cache/apt/archives/*.deb
  buildah umount "$ctr" >/dev/null
  logged debian-upgrade buildah run --isolation "$isolation" --network host "$ctr" -- sh -c \
    'export DEBIAN_FRONTEND=noninteractive; apt-get update && apt-get upgrade -y &&
     apt-get clean && rm -rf /var/lib/apt/lists/*'
  buildah config --env "$path_env" --cmd '["bash"]' --label "$recipe_label=$key" \
    --label "org.opencontainers.image.description=debian:12 stand-in (scripts/build-images.sh)" \
    "$ctr"
  buildah commit --quiet --rm "$ctr" "$debian_image" >/dev/null
}

# runtime_paths: the dpkg-query -L lines on stdin as tar member names, with what else the
# runtime base takes from the root: blank lines, documentation, man pages and libstdc++'s
# debugger scripts dropped (make_runtime_base copies the copyright files); /bin, /sbin, /lib and
# /lib64 as the /usr directories they link to in a merged-/usr root.
runtime_paths() {
  grep -v -E '^$|^/\.$|^/(bin|sbin|lib|lib64)$' |
    grep -v -E '^/usr/share/(doc|man|info|lintian|gdb|gcc)(/|$)' |
    sed -E 's,^/(bin|sbin|lib|lib64)/,/usr/\1/,; s,^/,,'
  echo usr/lib/os-release  # base-files'
  echo etc/os-release
  echo etc/debian_version
  echo etc/ssl
  echo etc/ssl/certs
  echo etc/ssl/certs/ca-certificates.crt  # made by ca-certificates' postinst, in no .list
}

# A stand-in for gcr.io/distroless/cc-debian12:nonroot, made of the Debian base's own packages.
# Like distroless it holds glibc (libc6, with its gconv modules and NSS files/dns), libgcc_s,
# libgomp, libstdc++ and OpenSSL 3 (libssl3: libssl, libcrypto, engines, the legacy provider),
# netbase's /etc/services and /etc/protocols, the Mozilla CA bundle at
# /etc/ssl/certs/ca-certificates.crt (SSL_CERT_FILE), /etc/os-release, the packages' copyright
# files and dpkg records under /var/lib/dpkg/status.d/ (for image scanners); passwd and group with
# root (0), nobody (65534) and nonroot (65532, home /home/nonroot), /tmp 1777, USER 65532,
# WORKDIR /home/nonroot, and no shell, no package manager, no setuid binary. It differs from the
# real image in: no tzdata (/usr/share/zoneinfo; without it and without TZ glibc's local time is
# UTC), merged /usr (/lib -> usr/lib, as Debian 12 lays it out), and the packages' versions are
# this Debian mirror's of today rather than distroless' pinned snapshot. Files are copied from an
# installed root (the .list files of dpkg), not unpacked from .debs, so what postinst scripts make
# (the CA bundle) is there.
make_runtime_base() {
  local key=$1 stage stage_mnt ctr mnt p
  new_container "$debian_image"
  stage=$container
  logged runtime-packages buildah run --isolation "$isolation" --network host "$stage" -- sh -c \
    "export DEBIAN_FRONTEND=noninteractive; apt-get update &&
     apt-get install -y --no-install-recommends ${runtime_packages[*]} ca-certificates"
  stage_mnt=$(buildah mount "$stage")
  new_container scratch
  ctr=$container
  mnt=$(buildah mount "$ctr")

  install -d -m 0755 "$mnt/usr/bin" "$mnt/usr/sbin" "$mnt/usr/lib" "$mnt/usr/lib64" \
    "$mnt/etc" "$mnt/var/lib/dpkg/status.d"
  local d
  for d in bin sbin lib lib64; do ln -s "usr/$d" "$mnt/$d"; done
  install -d -m 0700 "$mnt/root"
  install -d -m 1777 "$mnt/tmp"
  install -d -m 0700 -o 65532 -g 65532 "$mnt/home/nonroot"

  buildah run --isolation "$isolation" --network none "$stage" -- \
    dpkg-query -L "${runtime_packages[@]}" | runtime_paths |
    tar -C "$stage_mnt" --numeric-owner --no-recursion -cf - -T - |
    tar -C "$mnt" --numeric-owner -xpf -
  # Each package's copyright (its licence asks for it; some doc folders are links to another
  # package's, which install -D follows) and dpkg record.
  for p in "${runtime_packages[@]}" ca-certificates base-files; do
    install -D -m 0644 "$stage_mnt/usr/share/doc/$p/copyright" "$mnt/usr/share/doc/$p/copyright"
    buildah run --isolation "$isolation" --network none "$stage" -- dpkg-query -s "$p" \
      >"$mnt/var/lib/dpkg/status.d/$p"
  done

  cat >"$mnt/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
EOF
  cat >"$mnt/etc/group" <<'EOF'
root:x:0:
tty:x:5:
nobody:x:65534:
nonroot:x:65532:
EOF
  cat >"$mnt/etc/nsswitch.conf" <<'EOF'
passwd:    files
group:     files
hosts:     files dns
networks:  files
protocols: files
services:  files
EOF
  chmod 0644 "$mnt/etc/passwd" "$mnt/etc/group" "$mnt/etc/nsswitch.conf"
  if [ -e "$mnt/usr/bin/sh" ] || [ -e "$mnt/usr/bin/dpkg" ]; then
    say "the runtime base would hold a shell or dpkg"
    exit 1
  fi

  buildah umount "$ctr" >/dev/null
  buildah umount "$stage" >/dev/null
  buildah config --user 65532 --workingdir /home/nonroot --env "$path_env" \
    --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt --label "$recipe_label=$key" \
    --label "org.opencontainers.image.description=cc-debian12 stand-in (scripts/build-images.sh)" \
    "$ctr"
  buildah commit --quiet --rm "$ctr" "$runtime_image" >/dev/null
  buildah rm "$stage" >/dev/null
}

debian_key=$(recipe_of make_debian_base debian_sources -- "$suite" "$mirror" "$security_mirror")
runtime_key=$(recipe_of make_runtime_base runtime_paths -- "$debian_key" \
                "${runtime_packages[@]}")
if ((refresh_base)) || ! has_recipe "$debian_image" "$debian_key"; then
  say "making $debian_image (recipe $debian_key)"
  timed "base $debian_image" make_debian_base "$debian_key"
else
  say "$debian_image is up to date (recipe $debian_key)"
fi
if ((refresh_base)) || ! has_recipe "$runtime_image" "$runtime_key"; then
  say "making $runtime_image (recipe $runtime_key)"
  timed "base $runtime_image" make_runtime_base "$runtime_key"
else
  say "$runtime_image is up to date (recipe $runtime_key)"
fi

# --- the images ---------------------------------------------------------------------------------

# ref_of IMAGE: the full name an image is tagged and exported with (Docker Hub's, which is how
# containerd's CRI and the kubelet complete the chart's unqualified "kturn/kturnd").
ref_of() { echo "docker.io/${repository[$1]}:$tag"; }

build_image() {
  local name=$1 file context
  local args=(--build-arg "BUILD_IMAGE=$debian_image" --build-arg "RUNTIME_IMAGE=$runtime_image")
  if [ "$name" = media-echo ] || [ "$name" = janus ] || [ "$name" = pause ]; then  # e2e only
    file=$top/tests/e2e/$name.Containerfile
    context=$top/tests/e2e
    args=(--build-arg "BASE_IMAGE=$debian_image")
  else
    file=$top/deploy/docker/$name.Dockerfile
    context=$top  # the repository root; .dockerignore keeps the context to the sources
  fi
  logged "build-$name" buildah bud --layers --force-rm --pull=never --isolation "$isolation" \
    --network host "${args[@]}" -f "$file" -t "$(ref_of "$name")" "$context"
}

manifest=$out/images.tsv
[ -f "$manifest" ] || printf '# image\tarchive (in this directory)\timage id\n' >"$manifest"

# export_image IMAGE: writes the OCI archive and the image's line in images.tsv, unless the
# archive of this very image id is already there.
export_image() {
  local ref archive id
  ref=$(ref_of "$1")
  archive=$1_$tag.oci.tar
  id=$(buildah inspect --type image --format '{{.FromImageID}}' "$ref")
  if [ -f "$out/$archive" ] && grep -q -F -x "$(printf '%s\t%s\t%s' "$ref" "$archive" "$id")" \
       "$manifest"; then
    say "$archive holds $ref (${id:0:12}) already"
    return
  fi
  rm -f "$out/$archive.tmp"
  buildah push --quiet "$ref" "oci-archive:$out/$archive.tmp:$ref"
  mv "$out/$archive.tmp" "$out/$archive"
  { grep -v -F "$(printf '%s\t' "$ref")" "$manifest" || true
    printf '%s\t%s\t%s\n' "$ref" "$archive" "$id"; } >"$manifest.tmp"
  mv "$manifest.tmp" "$manifest"
}

import_image() {
  local archive=$out/$1_$tag.oci.tar
  logged "import-$1" ctr --address "$import_to" -n "$ctr_namespace" images import \
    --all-platforms ${ctr_snapshotter:+--snapshotter "$ctr_snapshotter"} "$archive"
}

[ -z "$import_to" ] || say "importing into the containerd at $import_to, namespace $ctr_namespace"
for name in "${images[@]}"; do
  say "building $(ref_of "$name") (log: $out/logs/build-$name.log)"
  timed "build $name" build_image "$name"
  timed "export $name" export_image "$name"
  if [ -n "$import_to" ]; then
    timed "import $name" import_image "$name"
  fi
done

say "images:"
for name in "${images[@]}"; do
  ref=$(ref_of "$name")
  # A row per tag of the image: the first. sed, not head: head's early exit would fail the pipe.
  size=$(buildah images --format '{{.Size}}' "$ref" | sed -n 1p)
  archive_size=$(du -h "$out/${name}_$tag.oci.tar" | cut -f1)
  printf '  %-44s %9s   %s (%s)\n' "$ref" "$size" "$out/${name}_$tag.oci.tar" "$archive_size" >&2
done
say "timings:"
printf '  %s\n' "${timings[@]}" >&2
