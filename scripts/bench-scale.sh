#!/usr/bin/env bash
# Benchmark, part 2: time against file count, and the decompression floor.
#
#   bash scripts/bench-scale.sh [WORKDIR]
#
# 1. Generates trees of 10 k, 100 k and 1 M small files (WORKDIR, default ~/gfxscan-bench; kept
#    between runs) — 90% short text files, 10% 4 KiB binary files, 100 files per folder — and
#    times `find -type f` and `gfxscan scan` on each (median of 3 warm runs): gfxscan's time per
#    file should stay flat from 10 k to 1 M.
# 2. Extracts every compressed bundle (CCOB) payload from the real libraries under
#    ../shared/corpus/files, times `zstd -d` over them (the floor: gfxscan must inflate them to
#    read their entries), and gfxscan scanning the same libraries, each repeated 20 times.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$HOME/gfxscan-bench}
mkdir -p "$work"
(cd "$here" && cargo build --release --quiet)
bin=$here/target/release/gfxscan
command -v zstd >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq zstd >/dev/null; }
command -v /usr/bin/time >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }

median3() { # CMD...: median wall seconds of 3 runs after a warm-up
  "$@" >/dev/null 2>&1 || true
  local t=() t0 t1
  for _ in 1 2 3; do
    t0=$EPOCHREALTIME; "$@" >/dev/null 2>&1 || true; t1=$EPOCHREALTIME
    t+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", b - a}')")
  done
  printf '%s\n' "${t[@]}" | sort -n | sed -n 2p
}

echo "== time against file count ($(nproc) cores, warm cache)"
printf '%-9s %10s %10s %8s %14s %12s\n' files "find s" "gfxscan s" "÷ find" "gfxscan µs/file" "peak RSS"
for n in 10000 100000 1000000; do
  dir=$work/files-$n
  if [ ! -f "$dir/.complete" ]; then
    rm -rf "$dir"
    python3 - "$dir" "$n" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
blob = bytes(range(256)) * 16
for i in range(n):
    d = os.path.join(root, f"d{i // 10000:03d}", f"e{(i // 100) % 100:02d}")
    if i % 100 == 0:
        os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"f{i:07d}" + (".bin" if i % 10 == 0 else ".txt")), "wb") as f:
        f.write(blob if i % 10 == 0 else b"line of text %d\n" % i)
open(os.path.join(root, ".complete"), "w").close()
PY
  fi
  f=$(median3 find "$dir" -type f)
  g=$(median3 "$bin" scan -q --json -o /dev/null "$dir")
  tmp=$(mktemp)
  /usr/bin/time -o "$tmp" -f '%M' "$bin" scan -q --json -o /dev/null "$dir" >/dev/null 2>&1 || true
  rss=$(tail -1 "$tmp"); rm -f "$tmp"
  awk -v n="$n" -v f="$f" -v g="$g" -v r="$rss" \
    'BEGIN {printf "%-9d %10.3f %10.3f %7.1fx %14.2f %9.0f MB\n", n, f, g, g / f, 1e6 * g / n, r / 1024}'
done

echo "== compressed bundles: gfxscan against the zstd -d floor"
pay=$work/ccob-payloads
rm -rf "$pay"; mkdir -p "$pay"
libs=()
while IFS= read -r -d '' so; do
  n=$(python3 - "$so" "$pay" <<'PY'
import struct, sys, os
path, out = sys.argv[1], sys.argv[2]
d = open(path, "rb").read()
if d[:4] != b"\x7fELF" or d[4] != 2:
    print(0); sys.exit()
shoff, = struct.unpack_from("<Q", d, 0x28); shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3a)
secs = [struct.unpack_from("<IIQQQQ", d, shoff + i * shentsize) for i in range(shnum)]
stroff = secs[shstrndx][4]
count = 0
for name, typ, flags, addr, off, size in secs:
    nm = d[stroff + name:d.index(b"\0", stroff + name)]
    if nm != b".hip_fatbin":
        continue
    pos = 0
    while pos + 32 <= size:
        h = d[off + pos: off + pos + 32]
        if h[:4] != b"CCOB":
            pos += 4096; continue
        ver, = struct.unpack_from("<H", h, 4)
        total = struct.unpack_from("<I", h, 8)[0] if ver == 2 else struct.unpack_from("<Q", h, 8)[0]
        hl = 24 if ver == 2 else 32
        open(os.path.join(out, f"{os.path.basename(path)}-{pos:x}.zst"), "wb").write(d[off + pos + hl: off + pos + total])
        count += 1
        pos = (pos + total + 4095) // 4096 * 4096
print(count)
PY
)
  [ "$n" -gt 0 ] && libs+=("$so")
done < <(find "$here/../shared/corpus/files" -name '*.so' -print0)
echo "${#libs[@]} libraries, $(ls "$pay" | wc -l) compressed bundles, $(du -cb "$pay"/*.zst | tail -1 | cut -f1) compressed bytes"
z=$(median3 bash -c "for i in \$(seq 20); do zstd -d -q -c $pay/*.zst > /dev/null; done")
g=$(median3 bash -c "for i in \$(seq 20); do $bin scan -q -j 1 --json -o /dev/null ${libs[*]}; done")
awk -v z="$z" -v g="$g" 'BEGIN {printf "20x zstd -d: %.3f s   20x gfxscan -j 1: %.3f s   ratio %.2fx\n", z, g, g / z}'
