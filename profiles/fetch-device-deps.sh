#!/usr/bin/env bash
# Run HERE (a Debian machine that reaches Debian's registry) before a device check. The GPU
# machine's image has the CUDA toolkit, a C++ compiler, CMake, ninja and Python, but none of the
# libraries Safhire builds with, and nothing can be installed there. This downloads their Debian
# packages and unpacks them into .device-deps/root (git-ignored), which the device tool carries:
#   libsodium (CSPRNG), zlib (IDX files), GMP (the lanes' integers), GoogleTest, Google Benchmark.
# Links are replaced by copies of what they point to (a carried link can lose its target), and
# /lib is folded into /usr/lib, so the tree reads the same on any image. profiles/device-check.sh
# uses a carried library only where the machine has no copy of its own.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
deps="$root/.device-deps"
packages=(libsodium-dev libsodium23 zlib1g-dev zlib1g libgmp-dev libgmp10 libgmpxx4ldbl
          libgtest-dev libbenchmark-dev libbenchmark1debian)

rm -rf "$deps"
mkdir -p "$deps/debs" "$deps/root"
cd "$deps/debs"
if ! apt-get download "${packages[@]}" >/dev/null 2>&1; then
  apt-get update -qq
  apt-get download "${packages[@]}" >/dev/null
fi
for deb in *.deb; do
  dpkg-deb -x "$deb" "$deps/root"
done
cd "$deps/root"
if [ -d lib ] && [ ! -L lib ]; then
  cp -a lib/. usr/lib/
  rm -rf lib
fi
# Every link becomes a copy of its target, read inside the tree (absolute targets too).
find . -type l | while read -r link; do
  target=$(readlink "$link")
  case "$target" in
    /lib/*) resolved="./usr$target" ;;
    /*) resolved=".$target" ;;
    *) resolved="$(dirname "$link")/$target" ;;
  esac
  rm "$link"
  # A link into a package not carried (usr/src/gtest) is dropped.
  if [ -e "$resolved" ]; then cp -r "$(readlink -f "$resolved")" "$link"; fi
done
rm -rf usr/share/doc usr/share/man "$deps/debs"
printf '%s\n' "${packages[@]}" >"$deps/PACKAGES"
du -sh "$deps" | sed 's/\t.*/ in .device-deps: /' | tr -d '\n'
tr '\n' ' ' <"$deps/PACKAGES"
echo
