#!/usr/bin/env bash
# Run HERE (a machine with Debian's registry) before a device check: downloads the Debian packages
# of GoogleTest and Google Benchmark into .device-deps/ (git-ignored), which the device tool
# carries to the GPU machine, whose image has nvcc and CMake but neither library.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$root/.device-deps"
cd "$root/.device-deps"
apt-get download libgtest-dev libbenchmark-dev libbenchmark1debian >/dev/null
ls -1 "$root/.device-deps"
