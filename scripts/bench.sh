#!/usr/bin/env bash
# Benchmark: gfxscan against the baselines users run today, on the same tree, in the same run.
#
#   bash scripts/bench.sh [DIR] [RUNS]
#
# Also: with ../shared/floors, gfxscan's time and peak RSS against the facts floor of the tree's
# compressed bundles; a rescan with --reuse against a fresh scan (byte-identical or it fails);
# WALK_FILES (default 1000000; 0 skips it) sets the size of the walk's tree: that many empty
# files in 1,000 folders, held against `find -type f` (the walk alone) and `find -printf %s`
# (the walk and one stat per file, what gfxscan needs to know a file is empty).
#
# DIR defaults to $GFXSCAN_DEBIAN_CORPUS/deb or ~/gfxscan-corpus/deb (the tree built by
# ../shared/corpus/fetch-debian.sh). Each command runs RUNS times (default 5) after one warm-up
# run; the median wall time is reported with files/s, peak RSS and the ratio to `find`.
# Baselines: `find DIR -type f` (the walk alone) and `grep -rac 'amdgcn-amd-amdhsa--gfx'`
# (the strings/grep heuristic of USERS.md §1b, which reads every byte).
# Cold cache (needs root and a writable /proc/sys/vm/drop_caches, else skipped): wall time and
# bytes read from disk (from /sys/block/*/stat) for find and gfxscan.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-${GFXSCAN_DEBIAN_CORPUS:-$HOME/gfxscan-corpus}/deb}
runs=${2:-5}
[ -d "$dir" ] || { echo "no tree at $dir: run ../shared/corpus/fetch-debian.sh first" >&2; exit 2; }
command -v /usr/bin/time >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }
(cd "$here" && cargo build --release --quiet)
bin=${CARGO_TARGET_DIR:-$here/target}/release/gfxscan

files=$(find "$dir" -type f | wc -l)
bytes=$(du -sb "$dir" | cut -f1)

# measure NAME CMD...: "NAME<TAB>median seconds<TAB>max RSS KiB" over $runs runs after a warm-up.
# The warm-up runs under /usr/bin/time for the peak RSS; the timed runs run the command alone (the
# wrapper's own start-up, about 1.5 ms, would count against commands that take milliseconds).
measure() {
  local name=$1 tmp rss t0 t1
  shift
  tmp=$(mktemp)
  /usr/bin/time -o "$tmp" -f '%M' "$@" >/dev/null 2>&1 || true
  rss=$(tail -1 "$tmp")
  local times=()
  for _ in $(seq "$runs"); do
    t0=$EPOCHREALTIME
    "$@" >/dev/null 2>&1 || true
    t1=$EPOCHREALTIME
    times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", b - a}')")
  done
  rm -f "$tmp"
  printf '%s\t%s\t%s\n' "$name" "$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')" "$rss"
}

results=$(
  measure "find -type f" find "$dir" -type f
  measure "gfxscan scan -j 1" "$bin" scan -q -j 1 --json -o /dev/null "$dir"
  measure "gfxscan scan" "$bin" scan -q --json -o /dev/null "$dir"
  measure "grep -rac amdgcn…gfx" grep -rac 'amdgcn-amd-amdhsa--gfx' "$dir"
)
base=$(printf '%s\n' "$results" | awk -F'\t' 'NR == 1 {print $2}')
echo "tree: $dir ($files files, $((bytes / 1048576)) MiB), $(nproc) cores, median of $runs warm runs"
printf '%-22s %9s %10s %10s %8s\n' command seconds files/s "peak RSS" "÷ find"
printf '%s\n' "$results" | awk -F'\t' -v files="$files" -v base="$base" '{
  s = $2 + 0
  printf "%-22s %9.3f %10.0f %7.1f MB %7.1fx\n", $1, s, (s > 0 ? files / s : 0), $3 / 1024, (base > 0 ? s / base : 0) }'

# Floors: what the facts themselves cost, whatever the reader does.
# 1. The largest Tensile index scanned alone: its MessagePack is walked value by value, and each
#    value's position depends on the one before, so it is one core's work.
index=$(find "$dir" -type f -name 'TensileLibrary*.dat' -printf '%s %p\n' | sort -n | tail -1 | cut -d' ' -f2-)
if [ -n "$index" ]; then
  # Alone, but where a Tensile index lives (a `library` folder), so it is read as one.
  alone=$(mktemp -d)
  mkdir -p "$alone/rocblas/library"
  ln "$index" "$alone/rocblas/library/" 2>/dev/null || cp "$index" "$alone/rocblas/library/"
  r=$(measure "index" "$bin" scan -q --json -o /dev/null "$alone")
  rm -rf "$alone"
  printf '%s\n' "$r" | awk -F'\t' -v base="$base" -v f="$(basename "$index")" -v sz="$(stat -c %s "$index")" \
    '{printf "floor: %s (%d MiB) alone takes %.3f s, %.1fx find of the whole tree\n", f, sz / 1048576, $2, $2 / base}'
fi
# 2. Bytes that must be read page by page: the note segments of AMDGPU code-object files (a
#    linked Tensile .co holds one metadata note per kernel, each needed for the kernel count) and
#    Tensile MessagePack indexes (processors sit after the solutions), each file once.
python3 - "$dir" "$bytes" <<'PY'
import os, struct, sys
root, tree = sys.argv[1], int(sys.argv[2])
seen, notes, index = set(), 0, 0
for d, _, names in os.walk(root):
    for n in names:
        p = os.path.join(d, n)
        st = os.lstat(p)
        if not os.path.isfile(p) or os.path.islink(p) or (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        if n.startswith("TensileLibrary") and n.endswith(".dat"):
            index += st.st_size
            continue
        with open(p, "rb") as f:
            h = f.read(64)
            if len(h) < 64 or h[:5] != b"\x7fELF\x02" or struct.unpack_from("<H", h, 18)[0] != 224:
                continue
            phoff, = struct.unpack_from("<Q", h, 32)
            phnum, = struct.unpack_from("<H", h, 56)
            f.seek(phoff)
            ph = f.read(56 * phnum)
            notes += sum(struct.unpack_from("<Q", ph, 56 * i + 32)[0] for i in range(phnum)
                         if len(ph) >= 56 * (i + 1) and struct.unpack_from("<I", ph, 56 * i)[0] == 4)
mib = 1 << 20
print(f"floor: code-object notes {notes // mib} MiB + Tensile indexes {index // mib} MiB"
      f" = {100 * (notes + index) / tree:.1f}% of the tree's bytes, read page by page")
PY

# 3. The decompression floor: `zstd -d` of exactly the compressed payloads the tree holds (every
#    CCOB's zstd frame), on as many parallel workers as gfxscan has threads. gfxscan must
#    inflate each to read the entries inside, so it can at best match this.
command -v zstd >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq zstd >/dev/null; }
payloads=$(mktemp -d)
trap 'rm -rf "$payloads"' EXIT
python3 - "$dir" "$payloads" <<'PY'
import mmap, os, struct, sys
root, out = sys.argv[1], sys.argv[2]
seen, n = set(), 0
for d, _, names in os.walk(root):
    for name in names:
        p = os.path.join(d, name)
        st = os.lstat(p)
        if not os.path.isfile(p) or os.path.islink(p) or (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        with open(p, "rb") as f:
            head = f.read(4)
            if head not in (b"CCOB", b"\x7fELF") or st.st_size < 32:
                continue
            m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            # A standalone CCOB, or those of a host library's `.hip_fatbin` (bundles start at
            # multiples of 4096 there).
            at = 0 if head == b"CCOB" else m.find(b"CCOB")
            while at >= 0:
                if at % 4096 == 0 and at + 32 <= len(m):
                    version, method = struct.unpack_from("<HH", m, at + 4)
                    header, total = {2: (24, struct.unpack_from("<I", m, at + 8)[0]),
                                     3: (32, struct.unpack_from("<Q", m, at + 8)[0])}.get(version, (0, 0))
                    # zstd only: what `zstd -d` reads
                    if method == 1 and header and at + total <= len(m):
                        n += 1
                        open(os.path.join(out, f"{n:06d}.zst"), "wb").write(m[at + header:at + total])
                if head == b"CCOB":
                    break
                at = m.find(b"CCOB", at + 4)
PY
count=$(find "$payloads" -type f | wc -l)
if [ "$count" -gt 0 ]; then
  inflate='find "$0" -type f -print0 | xargs -0 -P "$1" -n 32 zstd -d -q -c >/dev/null'
  one=$(measure "zstd -d ×1" bash -c "$inflate" "$payloads" 1 | cut -f2)
  all=$(measure "zstd -d ×$(nproc)" bash -c "$inflate" "$payloads" "$(nproc)" | cut -f2)
  j1=$(printf '%s\n' "$results" | awk -F'\t' 'NR == 2 {print $2}')
  jn=$(printf '%s\n' "$results" | awk -F'\t' 'NR == 3 {print $2}')
  awk -v c="$count" -v one="$one" -v all="$all" -v j1="$j1" -v jn="$jn" -v n="$(nproc)" 'BEGIN {
    printf "floor: zstd -d of the %d compressed payloads: %.3f s on 1 worker, %.3f s on %d\n", c, one, all, n
    printf "gfxscan ÷ decompression floor: %.2fx at -j 1, %.2fx at -j %d\n", j1 / one, jn / all, n }'
else
  echo "floor: no zstd-compressed bundles in the tree"
fi

# 4. The floors of ../shared/floors/README.md, when those tools are here: inflating every CCOB
#    payload in full (zfloor), inflating each only to its last fact (ZFLOOR_STOP=1), and the
#    scan of the rest of the tree (a hard-linked copy without the files that hold the payloads).
#    gfxscan is held against facts floor + rest of the tree at -j 1 and -j 2; `check` against
#    the rest of the tree alone.
floors=$here/../shared/floors
if [ -f "$floors/zfloor.c" ] && command -v python3 >/dev/null 2>&1; then
  [ -f /usr/include/zstd.h ] || { apt-get update -qq && apt-get install -y -qq libzstd-dev >/dev/null; }
  mkdir -p "${CARGO_TARGET_DIR:-$here/target}/floors"
  zf=${CARGO_TARGET_DIR:-$here/target}/floors/zfloor
  [ -x "$zf" ] || cc -O2 -o "$zf" "$floors/zfloor.c" -lzstd -lpthread
  work=$(mktemp -d -p "$(dirname "$dir")" .gfxscan-floors.XXXX 2>/dev/null || mktemp -d)
  trap 'rm -rf "$payloads" "$work"' EXIT
  python3 "$floors/ccob_ranges.py" "$dir" > "$work/payloads.tsv"
  python3 "$floors/facts_stop.py" < "$work/payloads.tsv" > "$work/stops.tsv"
  python3 "$floors/check_stop.py" gfx1100 < "$work/payloads.tsv" > "$work/check-stops.tsv"
  n=$(wc -l < "$work/stops.tsv")
  if [ "$n" -gt 0 ] && cp -al "$dir" "$work/rest" 2>/dev/null; then
    cut -f1 "$work/payloads.tsv" | sort -u | while IFS= read -r f; do rm -f "$work/rest/${f#"$dir"/}"; done
    for j in 1 2; do
      full=$(measure full "$zf" "$work/stops.tsv" "$j" | cut -f2)
      read -r facts frss <<< "$(measure facts env ZFLOOR_STOP=1 "$zf" "$work/stops.tsv" "$j" | cut -f2,3)"
      rest=$(measure rest "$bin" scan -q -j "$j" --json -o /dev/null "$work/rest" | cut -f2)
      read -r scan srss <<< "$(measure scan "$bin" scan -q -j "$j" --json -o /dev/null "$dir" | cut -f2,3)"
      check=$(measure check "$bin" check -q -j "$j" --gpu gfx1100 "$dir" | cut -f2)
      cfloor=$(measure cfloor env ZFLOOR_STOP=1 "$zf" "$work/check-stops.tsv" "$j" | cut -f2)
      crest=$(measure crest "$bin" check -q -j "$j" --gpu gfx1100 "$work/rest" | cut -f2)
      awk -v j="$j" -v n="$n" -v full="$full" -v facts="$facts" -v rest="$rest" -v scan="$scan" -v check="$check" \
        -v frss="$frss" -v srss="$srss" -v cfloor="$cfloor" -v crest="$crest" 'BEGIN {
        printf "-j %d: %d CCOB payloads; full inflate %.3f s, facts floor %.3f s, rest of the tree %.3f s\n", j, n, full, facts, rest
        printf "-j %d: gfxscan scan %.3f s = %.2fx (facts floor + rest); check --gpu gfx1100 %.3f s = %.2fx rest\n", j, scan, scan / (facts + rest), check, check / rest
        printf "-j %d: check --gpu gfx1100 %.3f s = %.2fx its floor (inflate to the checked entry %.3f s + check of the rest %.3f s)\n", j, check, check / (cfloor + crest), cfloor, crest
        printf "-j %d: peak RSS gfxscan scan %.0f MB, facts floor %.0f MB: %+.0f MB\n", j, srss / 1024, frss / 1024, (srss - frss) / 1024 }'
    done
  else
    echo "floors: no CCOB v2/v3 payloads in the tree, or no hard-linked copy possible"
  fi
else
  echo "floors: ../shared/floors not here"
fi

# Rescans: the tree scanned fresh, and with --reuse of a snapshot of it written first. The
# snapshot records only files that last changed at least 2 s before it was written (see
# src/reuse.rs), so a tree written just now is given time to settle. The rescan's JSON must be
# the snapshot's, byte for byte.
snap=$(mktemp --suffix=.json)
rescan=$(mktemp --suffix=.json)
newest=$(find "$dir" -type f -printf '%C@\n' 2>/dev/null | sort -n | tail -1)
wait=$(awk -v n="${newest:-0}" -v now="$EPOCHREALTIME" 'BEGIN {w = n + 2.2 - now; print (w > 0 ? w : 0)}')
sleep "$wait"
"$bin" scan -q --json --reuse "$snap.absent" -o "$snap" "$dir" || true
fresh=$(measure fresh "$bin" scan -q --json -o /dev/null "$dir")
reused=$(measure reused "$bin" scan -q --json --reuse "$snap" -o /dev/null "$dir")
said=$("$bin" scan --json --reuse "$snap" -o "$rescan" "$dir" 2>&1 >/dev/null || true)
same=$(cmp -s "$snap" "$rescan" && echo "byte-identical" || echo "DIFFERENT")
# Whether the rescan was answered from the walk alone (nothing changed, no archive, no problem).
case $said in
  *"it is this scan's JSON"*) same="$same, answered from the walk's stats alone" ;;
  *) same="$same, facts taken file by file" ;;
esac
known=$(grep -c '"ino":' "$snap" || true)
printf '%s\n%s\n' "$fresh" "$reused" | awk -F'\t' -v same="$same" -v known="$known" '
  NR == 1 {f = $2; fr = $3} NR == 2 {r = $2; rr = $3}
  END {printf "rescan: fresh %.3f s (%.0f MB), --reuse %.3f s (%.0f MB) = %.0f%% of fresh; %s; %d files known\n", f, fr / 1024, r, rr / 1024, 100 * r / f, same, known}'
rm -f "$snap" "$rescan"
[ "${same%%,*}" = "byte-identical" ] || { echo "a rescan with --reuse differs from the snapshot" >&2; exit 1; }

# The walk: empty files in 1,000 folders, against find (the walk alone) and find -printf %s (the
# walk and a stat per file). gfxscan opens none of them.
walk_files=${WALK_FILES:-1000000}
if [ "$walk_files" -gt 0 ]; then
  wt=$(mktemp -d)
  python3 - "$wt" "$walk_files" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
per = max(1, n // 1000)
for i in range(n):
    d = os.path.join(root, f"d{i // per:04d}")
    if i % per == 0:
        os.makedirs(d, exist_ok=True)
    open(os.path.join(d, f"f{i:07d}"), "w").close()
PY
  walk=$(
    measure "find -type f" find "$wt" -type f
    measure "find -printf %s" find "$wt" -type f -printf '%s\n'
    measure "gfxscan -j 1" "$bin" scan -q -j 1 --json -o /dev/null "$wt"
    measure "gfxscan -j 2" "$bin" scan -q -j 2 --json -o /dev/null "$wt"
  )
  rm -rf "$wt"
  printf '%s\n' "$walk" | awk -F'\t' -v n="$walk_files" '
    {name[NR] = $1; t[NR] = $2; rss[NR] = $3}
    END {for (i = 1; i <= NR; i++)
      printf "walk of %d empty files: %-16s %7.3f s %7.1f MB  %5.2fx find  %5.2fx find with stat\n", n, name[i], t[i], rss[i] / 1024, t[i] / t[1], t[i] / t[2]}'
fi

# cold CMD...: "seconds KiB-read" with the page cache dropped first.
cold() {
  sync
  echo 3 > /proc/sys/vm/drop_caches
  local before after t0 t1
  before=$(awk '{s += $3} END {print s}' /sys/block/*/stat)
  t0=$EPOCHREALTIME
  "$@" >/dev/null 2>&1 || true
  t1=$EPOCHREALTIME
  after=$(awk '{s += $3} END {print s}' /sys/block/*/stat)
  awk -v a="$t0" -v b="$t1" -v r="$(( (after - before) / 2 ))" 'BEGIN {printf "%.3f %d\n", b - a, r}'
}
if [ "$(id -u)" = 0 ] && (echo 3 > /proc/sys/vm/drop_caches) 2>/dev/null; then
  read -r fs fr <<< "$(cold find "$dir" -type f)"
  read -r gs gr <<< "$(cold "$bin" scan -q --json -o /dev/null "$dir")"
  read -r cs cr <<< "$(cold "$bin" check -q --gpu gfx1100 "$dir")"
  echo "cold cache: find ${fs}s (read $((fr / 1024)) MiB), gfxscan ${gs}s (read $((gr / 1024)) MiB," \
    "$(awk -v r="$gr" -v t="$bytes" 'BEGIN {printf "%.1f", 100 * r * 1024 / t}')% of the tree's bytes):" \
    "$(awk -v a="$gs" -v b="$fs" 'BEGIN {printf "%.1f", a / b}')x find"
  echo "cold cache: check --gpu gfx1100 ${cs}s (read $((cr / 1024)) MiB," \
    "$(awk -v c="$cr" -v g="$gr" 'BEGIN {printf "%.1f", (g > 0 ? 100 * c / g : 0)}')% of what scan reads)"
else
  echo "cold cache: skipped (needs root and a writable /proc/sys/vm/drop_caches)"
fi
