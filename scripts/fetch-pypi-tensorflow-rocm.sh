#!/usr/bin/env bash
# Downloads the one public library known to keep whole clang offload bundles as data: PyPI's
# tensorflow-rocm 2.14.0.600, whose tensorflow/libtensorflow_cc.so.2 holds 1,149 plain bundles in
# `.rodata` (TensorFlow's generated kernels, each a `*_kernel_blob` constant it hands to
# hipModuleLoadData) beside 241 in `.hip_fatbin`. For tests/corpus.rs
# `tensorflow_rodata_bundles_match_the_bundler`; truth: tests/data/truth/README.md.
# Only that member is kept (1.39 GB; the 427 MB wheel is deleted). Nothing is installed.
#
# Usage: bash scripts/fetch-pypi-tensorflow-rocm.sh [DIR]
#   (default ~/gfxscan-corpus; the file goes to DIR/pypi/tensorflow-rocm-2.14.0.600/)
set -euo pipefail
DIR=${1:-$HOME/gfxscan-corpus}
OUT="$DIR/pypi/tensorflow-rocm-2.14.0.600"
WHL=tensorflow_rocm-2.14.0.600-cp311-cp311-manylinux2014_x86_64.whl
WHL_SHA=c9f3e6f81ea916d8a7481a3d59240867b36ead2ff5474e5ba233b2b598baf7fe
MEMBER=tensorflow/libtensorflow_cc.so.2
MEMBER_SHA=df576fba596a8b0f76ee3afc3b861c59d1c05b3a563285c298d4631d4ae889f0
ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }
mkdir -p "$OUT"
if ok "$OUT/$MEMBER" "$MEMBER_SHA"; then
  echo "present: $OUT/$MEMBER"
  exit 0
fi
if ! ok "$OUT/$WHL" "$WHL_SHA"; then
  rm -f "$OUT/$WHL"
  python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
    --implementation cp --abi cp311 --platform manylinux2014_x86_64 tensorflow-rocm==2.14.0.600 -d "$OUT"
  ok "$OUT/$WHL" "$WHL_SHA" || { echo "sha256 mismatch: $OUT/$WHL" >&2; exit 1; }
fi
python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract(sys.argv[2], sys.argv[3])' \
  "$OUT/$WHL" "$MEMBER" "$OUT"
ok "$OUT/$MEMBER" "$MEMBER_SHA" || { echo "sha256 mismatch: $OUT/$MEMBER" >&2; exit 1; }
rm -f "$OUT/$WHL"
echo "fetched: $OUT/$MEMBER"
