#!/usr/bin/env bash
# Rebuilds sample/ from real files, byte for byte, and writes sample/PROVENANCE.tsv.
# Needs ../shared/corpus/files and the Debian trees of ../shared/corpus/fetch-debian.sh and
# fetch-debian-rocm64.sh (GFXSCAN_DEBIAN_CORPUS, default ~/gfxscan-corpus).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$PWD/sample
C1=$(cd ../shared/corpus/files && pwd)                 # shared corpus root
C2=${GFXSCAN_DEBIAN_CORPUS:-$HOME/gfxscan-corpus}      # Debian tree root (deb/<suite>/<pkg>_<ver>/...)
rm -rf "$out"; mkdir -p "$out"
P="$out/PROVENANCE.tsv"
printf 'sample_path\tcorpus_path\tbytes\tsha256\tnote\n' > "$P"
src_of() { if [ -f "$C1/$1" ]; then echo "$C1/$1"; elif [ -f "$C2/$1" ]; then echo "$C2/$1"; else echo "missing: $1" >&2; exit 1; fi; }
put() { # put CORPUS_PATH SAMPLE_PATH NOTE
  local s; s=$(src_of "$1")
  mkdir -p "$(dirname "$out/$2")"
  cp "$s" "$out/$2"
  cmp -s "$s" "$out/$2"
  printf '%s\t%s\t%s\t%s\t%s\n' "$2" "$1" "$(stat -c %s "$s")" "$(sha256sum "$s" | cut -d' ' -f1)" "$3" >> "$P"
}
link() { # link CORPUS_PATH SAMPLE_PATH TARGET NOTE
  local t; t=$(readlink "$C2/$1" 2>/dev/null || true)
  [ -z "$t" ] || [ "$t" = "$3" ] || { echo "link target mismatch for $1: $t vs $3" >&2; exit 1; }
  mkdir -p "$(dirname "$out/$2")"
  ln -s "$3" "$out/$2"
  printf '%s\t%s\t%s\t%s\t%s\n' "$2" "$1" 0 "symlink->$3" "$4" >> "$P"
}
L=usr/lib/x86_64-linux-gnu
# --- HSA runtime (raw embedded blit kernels + trap handlers) -----------------------------
hsa=deb/trixie/libhsa-runtime64-1_6.1.2-3/$L
put "$hsa/libhsa-runtime64.so.1.13.0" opt/rocm/lib/libhsa-runtime64.so.1.13.0 \
  "Debian trixie libhsa-runtime64-1 6.1.2-3 (ROCr, ROCm 6.1.2); embedded blit kernels and trap handlers; kept instead of sid's 6.4.3 build (libhsa-runtime64.so.1.15.0, 4.36 MB) for the 10 MB budget"
link "$hsa/libhsa-runtime64.so.1" opt/rocm/lib/libhsa-runtime64.so.1 libhsa-runtime64.so.1.13.0 \
  "symlink, as shipped in libhsa-runtime64-1 6.1.2-3"
# --- rocBLAS 4.4.1 Tensile library (lazy loading), subset for gfx900, gfx1030, gfx1100 -----
rb=deb/sid/librocblas4_6.4.4-4/$L/rocblas/4.4.1/library
rbn="Debian sid librocblas4 6.4.4-4 (rocBLAS 4.4.1, ROCm 6.4), subset of its 1,349-file Tensile library dir"
for a in gfx900 gfx1030 gfx1100; do
  put "$rb/TensileLibrary_lazy_$a.dat" "opt/rocm/lib/rocblas/library/TensileLibrary_lazy_$a.dat" "$rbn; lazy-loading index for $a"
done
for k in DD SS; do
  f=TensileLibrary_Type_${k}_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback
  put "$rb/$f.dat" "opt/rocm/lib/rocblas/library/$f.dat" "$rbn; fallback solution index (all archs)"
  for a in gfx900 gfx1030 gfx1100; do
    put "$rb/${f}_$a.hsaco" "opt/rocm/lib/rocblas/library/${f}_$a.hsaco" "$rbn; fallback kernels for $a (source kernels, CO v5)"
  done
done
for f in TensileLibrary_Type_ZZ_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx900.dat \
         TensileLibrary_Type_ZZ_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx900.co \
         TensileLibrary_Type_DD_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx900.dat \
         TensileLibrary_Type_DD_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx900.hsaco; do
  put "$rb/$f" "opt/rocm/lib/rocblas/library/$f" "$rbn; gfx900-only solutions (the smallest non-fallback set; gfx1030/gfx1100 ones are 5-17 MB each)"
done
# --- hipBLASLt 7.1 (TensileLite) library: gfx1100 subset -----------------------------------
hb=deb/sid/libhipblaslt1_7.1.1+dfsg-4/$L/hipblaslt/library
hbn="Debian sid libhipblaslt1 7.1.1+dfsg-4 (hipBLASLt, ROCm 6.4/7.1 era), subset of its 1,467-file library dir"
put "$hb/hipblasltTransform.hsaco" opt/rocm/lib/hipblaslt/library/hipblasltTransform.hsaco "$hbn; plain offload bundle, gfx908 only in this build"
put "$hb/TensileLiteLibrary_lazy_Mapping.dat" opt/rocm/lib/hipblaslt/library/TensileLiteLibrary_lazy_Mapping.dat "$hbn; TensileLite mapping index"
put "$hb/TensileLibrary_lazy_gfx1100.dat" opt/rocm/lib/hipblaslt/library/TensileLibrary_lazy_gfx1100.dat "$hbn; lazy-loading index for gfx1100"
put "$hb/hipblasltExtOpLibrary.dat" opt/rocm/lib/hipblaslt/library/hipblasltExtOpLibrary.dat "$hbn; ExtOp index"
put "$hb/extop_gfx1100.co" opt/rocm/lib/hipblaslt/library/extop_gfx1100.co "$hbn; ExtOp kernels for gfx1100"
for e in dat co; do
  f=TensileLibrary_DD_DD_UA_Type_DD_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx1100.$e
  put "$hb/$f" "opt/rocm/lib/hipblaslt/library/$f" "$hbn; DD solutions for gfx1100 (.co is CCOB v2 + zstd)"
done
# --- MIOpen databases ---------------------------------------------------------------------
md=github/miopen/develop-2024-10-24/share/miopen/db
mn="MIOpen develop snapshot 2024-10-24, installed share/miopen/db (Debian's libmiopen1 6.4.3 ships no DB)"
put "$md/gfx1030_36.db" opt/rocm/share/miopen/db/gfx1030_36.db "$mn; SQLite perf DB, gfx1030 36 CUs"
put "$md/gfx900_56.OpenCL.fdb.txt" opt/rocm/share/miopen/db/gfx900_56.OpenCL.fdb.txt "$mn; text find-DB, gfx900 56 CUs"
put "$md/gfx942_metadata.tn.model" opt/rocm/share/miopen/db/gfx942_metadata.tn.model "$mn; tuning model (gfx942; kept from the previous sample, no gfx900/1030/1100 model exists)"
# --- device-library bitcode (a handful of ISAs) -------------------------------------------
dl=deb/trixie/rocm-device-libs-17_6.0+git20231212.5a852ed-2/usr/lib/llvm-17/lib/clang/17/amdgcn/bitcode
for v in 900 906 942 1030 1032 1100 1101; do
  put "$dl/oclc_isa_version_$v.bc" "opt/rocm/amdgcn/bitcode/oclc_isa_version_$v.bc" "Debian trixie rocm-device-libs-17 6.0+git20231212.5a852ed-2; per-ISA device-library bitcode"
done
# --- a Python extension with a compressed .hip_fatbin -------------------------------------
put whl/jax_rocm7_plugin-0.12.0/jax_rocm7_plugin/_prng.so venv/lib/python3.12/site-packages/jax_rocm7_plugin/_prng.so \
  "PyPI wheel jax_rocm7_plugin 0.12.0; .hip_fatbin CCOB v3 + zstd, 27 targets incl. gfx900/gfx1030/gfx1100"
# --- firmware (Debian firmware-amd-graphics 20250410-2) -----------------------------------
fw=deb/trixie/firmware-amd-graphics_20250410-2/usr/lib/firmware/amdgpu
fn="Debian trixie firmware-amd-graphics 20250410-2"
for f in vega10_ce.bin vega10_me.bin vega10_mec.bin vega10_pfp.bin vega10_rlc.bin vega10_sdma.bin vega10_sdma1.bin vega10_gpu_info.bin; do
  put "$fw/$f" "lib/firmware/amdgpu/$f" "$fn; Vega 10 = gfx900"
done
link "$fw/vega10_mec2.bin" lib/firmware/amdgpu/vega10_mec2.bin vega10_mec.bin "$fn; symlink, as shipped in the package"
for f in sienna_cichlid_ce.bin sienna_cichlid_me.bin sienna_cichlid_mec.bin sienna_cichlid_pfp.bin sienna_cichlid_rlc.bin sienna_cichlid_sdma.bin; do
  put "$fw/$f" "lib/firmware/amdgpu/$f" "$fn; Sienna Cichlid = gfx1030 (graphics/compute/SDMA ucode subset)"
done
link "$fw/sienna_cichlid_mec2.bin" lib/firmware/amdgpu/sienna_cichlid_mec2.bin sienna_cichlid_mec.bin "$fn; symlink, as shipped in the package"
for f in gc_11_0_0_imu.bin gc_11_0_0_pfp.bin gc_11_0_0_rlc.bin; do
  put "$fw/$f" "lib/firmware/amdgpu/$f" "$fn; GC 11.0.0 = gfx1100 (subset)"
done
echo "sample rebuilt: $(du -sb "$out" | cut -f1) bytes, $(($(wc -l < "$P") - 1)) rows"
