#!/usr/bin/env bash
# Downloads real wheels that carry HIP device code, for the archive checks of tests/corpus.rs
# (`wheels_scan_like_their_files_in_the_corpus`): the same releases whose files
# ../shared/corpus/files/whl/ keeps, so gfxscan's reading of each wheel can be compared with its
# reading of the corpus copies. Nothing is installed.
#
# Usage: bash scripts/fetch-wheels.sh [DIR]     (default: ~/gfxscan-corpus; wheels go to DIR/wheels)
set -euo pipefail
DIR=${1:-$HOME/gfxscan-corpus}
mkdir -p "$DIR/wheels"
for spec in bitsandbytes==0.50.2:manylinux_2_24_x86_64 gafime_rocm==0.4.7:manylinux_2_28_x86_64; do
  pkg=${spec%%:*}
  python3 -m pip download --quiet --no-deps --only-binary=:all: --platform "${spec#*:}" \
    --python-version 3.11 -d "$DIR/wheels" "$pkg"
done
# A wheel built with ROCm 4.0, whose bundle entries carry pre-4.1 IDs (tests/corpus.rs
# `cupy_rocm_4_0_pre_4_1_ids_never_load`).
python3 -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux1_x86_64 \
  --python-version 3.9 -d "$DIR/wheels" cupy-rocm-4-0==10.6.0
ls -l "$DIR/wheels"/*.whl
