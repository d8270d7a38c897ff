#!/usr/bin/env bash
# Rebuilds sample/: a small real ROCm-like install (about 6 MB) taken file for file from
# ../shared/corpus/files, so that `gfxscan scan sample` shows real output on any machine.
# Every file is copied byte for byte; sample/PROVENANCE.tsv records source path and sha256.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
src=${1:-$here/../shared/corpus/files}
out=$here/sample
rm -rf "$out"
mkdir -p "$out"
printf 'sample_path\tcorpus_path\tbytes\tsha256\n' > "$out/PROVENANCE.tsv"
put() { # put CORPUS_PATH SAMPLE_PATH
  mkdir -p "$(dirname "$out/$2")"
  cp "$src/$1" "$out/$2"
  printf '%s\t%s\t%s\t%s\n' "$2" "$1" "$(stat -c %s "$src/$1")" "$(sha256sum "$src/$1" | cut -d' ' -f1)" >> "$out/PROVENANCE.tsv"
}
rb=github/rocmlibs/rocblas-gfx1032/library
hb="github/rocmlibs/hipblaslt-gfx110x/hipblaslt-rocmlibs-for-gfx1100-gfx1101-gfx1102-gfx1103-gfx1150-for hip6.2/library"
fw=deb/trixie/firmware-amd-graphics_20250410-2/usr/lib/firmware/amdgpu
dl=deb/trixie/rocm-device-libs-17_6.0+git20231212.5a852ed-2/usr/lib/llvm-17/lib/clang/17/amdgcn/bitcode
# Runtime with raw embedded code objects (36 V4 blit kernels + 3 V2 trap handlers).
put deb/trixie/libhsa-runtime64-1_6.1.2-3/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1.13.0 opt/rocm/lib/libhsa-runtime64.so.1.13.0
# A .hsaco that is really a plain offload bundle (5 targets).
put "$hb/hipblasltTransform.hsaco" opt/rocm/lib/hipblaslt/library/hipblasltTransform.hsaco
put "$hb/TensileLibrary_lazy_gfx1100.dat" opt/rocm/lib/hipblaslt/library/TensileLibrary_lazy_gfx1100.dat
# A lazy-loading rocBLAS library dir for gfx1032 (index, manifest, a V4 .co, V5 .hsaco).
for f in TensileLibrary_lazy_gfx1032.dat TensileManifest.txt Kernels.so-000-gfx1032.hsaco \
         TensileLibrary_Type_HH_HPA_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx1032.co \
         TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback.dat \
         TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback_gfx1032.hsaco \
         TensileLibrary_Type_DD_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback.dat \
         TensileLibrary_Type_DD_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback_gfx1032.hsaco; do
  put "$rb/$f" "opt/rocm/lib/rocblas/library/$f"
done
# MIOpen: a text find-DB and a tuning model.
put github/miopen/develop-2024-10-24/share/miopen/db/gfx900_56.OpenCL.fdb.txt opt/rocm/share/miopen/db/gfx900_56.OpenCL.fdb.txt
put github/miopen/develop-2024-10-24/share/miopen/db/gfx942_metadata.tn.model opt/rocm/share/miopen/db/gfx942_metadata.tn.model
# Device-library bitcode, one file per ISA.
for f in "$src/$dl"/oclc_isa_version_*.bc; do
  put "$dl/$(basename "$f")" "opt/rocm/amdgcn/bitcode/$(basename "$f")"
done
# A Python extension with a compressed (CCOB v3, zstd) .hip_fatbin for 27 targets.
put whl/jax_rocm7_plugin-0.12.0/jax_rocm7_plugin/_prng.so venv/lib/python3.12/site-packages/jax_rocm7_plugin/_prng.so
# Firmware: Vega 10 (gfx900) and GC 11.0.0 (gfx1100) blobs.
for f in vega10_ce.bin vega10_me.bin vega10_mec.bin vega10_pfp.bin vega10_rlc.bin vega10_sdma.bin vega10_sdma1.bin \
         vega10_gpu_info.bin gc_11_0_0_imu.bin gc_11_0_0_rlc.bin gc_11_0_0_pfp.bin; do
  [ -f "$src/$fw/$f" ] && put "$fw/$f" "lib/firmware/amdgpu/$f"
done
# The package ships vega10_mec2.bin as a link to vega10_mec.bin (the corpus stores it as a
# small file naming its target; MANIFEST.tsv says "symlink->vega10_mec.bin").
ln -s vega10_mec.bin "$out/lib/firmware/amdgpu/vega10_mec2.bin"
printf '%s\t%s\t%s\t%s\n' lib/firmware/amdgpu/vega10_mec2.bin "$fw/vega10_mec2.bin" 0 "symlink->vega10_mec.bin" >> "$out/PROVENANCE.tsv"
echo "sample rebuilt: $(du -sh "$out" | cut -f1), $(($(wc -l < "$out/PROVENANCE.tsv") - 1)) files"
