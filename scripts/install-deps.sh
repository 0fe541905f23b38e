#!/usr/bin/env bash
# Installs the Debian packages Sextant needs, only those that are missing.
# The README explains why each one is here.
set -euo pipefail
pkgs=(
  cmake ninja-build ccache g++ pkg-config
  qt6-base-dev qt6-base-dev-tools qt6-svg-dev
  libgraphviz-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libsqlite3-dev
  nlohmann-json3-dev
  libopenblas-dev
  libmimalloc-dev
  libgtest-dev libbenchmark-dev
  python3-onnx python3-numpy
  clang libclang-rt-dev
  xvfb xauth fonts-dejavu-core
)
missing=()
for p in "${pkgs[@]}"; do
  [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" == *'install ok installed'* ]] || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
echo "installing missing packages: ${missing[*]}"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
