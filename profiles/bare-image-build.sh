#!/usr/bin/env bash
# Proof, on a machine without a GPU, that the device check builds on a bare GPU image: makes
# (once) a minimal Debian root holding only what that image is known to have besides CUDA (a C++
# compiler, CMake, ninja, Python), binds the CUDA toolkit and this checkout into it, and runs
# profiles/device-check.sh there with the carried .device-deps and nothing else: first
# --build-only (timed), then in full, which without a GPU must fail at the device step and name
# it. Prints both verdicts and the build time.
# Needs root, debootstrap, Debian's registry and the CUDA toolkit in /usr/local/cuda; minutes on
# the first run (the root is kept in ~/.cache/safhire-bare-root, or SAFHIRE_BARE_ROOT). Not part
# of CI.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rootfs=${SAFHIRE_BARE_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/safhire-bare-root}
cuda=$(readlink -f /usr/local/cuda)
[ -x "$cuda/bin/nvcc" ] || { echo "bare-image-build: no CUDA toolkit in /usr/local/cuda" >&2; exit 2; }
if [ ! -x "$rootfs/usr/bin/g++" ]; then
  command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null
  debootstrap --variant=minbase --include=g++,cmake,ninja-build,python3 bookworm "$rootfs" \
    http://deb.debian.org/debian >/dev/null
fi
# What the check must not find in the image: each of these comes from .device-deps or not at all.
for f in usr/include/sodium.h usr/include/zlib.h usr/include/gtest usr/include/benchmark usr/include/gmpxx.h \
         usr/bin/pkg-config usr/bin/pkgconf; do
  if [ -e "$rootfs/$f" ]; then
    echo "bare-image-build: $rootfs has /$f; remove that package from the root" >&2
    exit 2
  fi
done
[ -d "$root/.device-deps/root" ] || bash "$root/profiles/fetch-device-deps.sh"

# check ARGS...: profiles/device-check.sh inside the root, in a private mount namespace.
check() {
  unshare --mount --propagation private bash -s "$rootfs" "$cuda" "$root" "$@" <<'EOF'
set -e
rootfs=$1 cuda=$2 src=$3
shift 3
mkdir -p "$rootfs$cuda" "$rootfs/src" "$rootfs/proc" "$rootfs/dev"
mount --bind "$cuda" "$rootfs$cuda"
ln -sfn "$cuda" "$rootfs/usr/local/cuda"
mount --bind "$src" "$rootfs/src"
mount --bind /dev "$rootfs/dev"
mount -t proc proc "$rootfs/proc"
set +e
chroot "$rootfs" /usr/bin/env -i PATH=/usr/local/cuda/bin:/usr/bin:/bin HOME=/root \
  OUT=/src/out/bare-check SAFHIRE_DEVICE_BUILD_DIR=/src/build-bare \
  bash /src/profiles/device-check.sh "$@"
EOF
}

rm -rf "$root/build-bare"
mkdir -p "$root/out"
t0=$(date +%s)
build_rc=0
check --build-only >"$root/out/bare-build.log" 2>&1 || build_rc=$?
build_s=$(($(date +%s) - t0))
t1=$(date +%s)
full_rc=0
check >"$root/out/bare-check.log" 2>&1 || full_rc=$?
full_s=$(($(date +%s) - t1))
echo "build only (clean build of test_cuda, bench_cuda, safhire): rc $build_rc, $build_s s" \
  "($(nproc) cores); log out/bare-build.log"
echo "full check without a GPU: rc $full_rc, $full_s s after the build; log out/bare-check.log"
tail -n 12 "$root/out/bare-check.log"
if [ "$build_rc" -ne 0 ] || [ "$full_rc" -eq 0 ] ||
   ! grep -q "no usable CUDA device" "$root/out/bare-check.log"; then
  echo "bare-image-build: FAIL" >&2
  exit 1
fi
echo "bare-image-build: PASS (built on the bare root; the full check failed at the device, naming it)"
