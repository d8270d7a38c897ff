#!/usr/bin/env bash
# Benchmark: gfxscan against the baselines users run today, on the same tree, in the same run.
#
#   bash scripts/bench.sh [DIR] [RUNS]
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
bin=$here/target/release/gfxscan

files=$(find "$dir" -type f | wc -l)
bytes=$(du -sb "$dir" | cut -f1)

# measure NAME CMD...: "NAME<TAB>median seconds<TAB>max RSS KiB" over $runs runs after a warm-up.
measure() {
  local name=$1 tmp rss=0 t0 t1 r
  shift
  tmp=$(mktemp)
  "$@" >/dev/null 2>&1 || true
  local times=()
  for _ in $(seq "$runs"); do
    t0=$EPOCHREALTIME
    /usr/bin/time -o "$tmp" -f '%M' "$@" >/dev/null 2>&1 || true
    t1=$EPOCHREALTIME
    times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", b - a}')")
    r=$(tail -1 "$tmp")
    [ "$r" -gt "$rss" ] && rss=$r
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
  echo "cold cache: find ${fs}s (read $((fr / 1024)) MiB), gfxscan ${gs}s (read $((gr / 1024)) MiB," \
    "$(awk -v r="$gr" -v t="$bytes" 'BEGIN {printf "%.1f", 100 * r * 1024 / t}')% of the tree's bytes):" \
    "$(awk -v a="$gs" -v b="$fs" 'BEGIN {printf "%.1f", a / b}')x find"
else
  echo "cold cache: skipped (needs root and a writable /proc/sys/vm/drop_caches)"
fi
