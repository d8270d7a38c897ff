#!/usr/bin/env bash
# Benchmark: gfxscan against the baselines users run today, on the same tree, in the same run.
#
#   bash scripts/bench.sh [DIR] [RUNS]
#
# DIR defaults to $GFXSCAN_DEBIAN_CORPUS/deb or ~/gfxscan-corpus/deb (the tree built by
# ../shared/corpus/fetch-debian.sh). Each command runs RUNS times (default 5) after one warm-up
# run; the median wall time is reported, with files/s, peak RSS and the ratio to `find`.
# Baselines: `find DIR -type f` (the walk alone) and `grep -rac 'amdgcn-amd-amdhsa--gfx'`
# (the strings/grep heuristic of USERS.md §1b, which reads every byte).
# Cold-cache figures need root and /proc/sys/vm/drop_caches; they are skipped where not allowed.
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

# measure NAME CMD...: median wall seconds and max RSS (KiB) over $runs runs, after a warm-up.
measure() {
  local name=$1; shift
  "$@" >/dev/null 2>&1 || true
  local times=() rss=0 out tmp
  tmp=$(mktemp)
  for _ in $(seq "$runs"); do
    /usr/bin/time -o "$tmp" -f '%e %M' "$@" >/dev/null 2>&1 || true
    out=$(tail -1 "$tmp")
    times+=("${out% *}")
    [ "${out#* }" -gt "$rss" ] && rss=${out#* }
  done
  rm -f "$tmp"
  local med
  med=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  printf '%s\t%s\t%s\n' "$name" "$med" "$rss"
}

results=$(
  measure "find -type f" find "$dir" -type f
  measure "gfxscan scan -j1" "$bin" scan -q -j 1 --json -o /dev/null "$dir"
  measure "gfxscan scan" "$bin" scan -q --json -o /dev/null "$dir"
  measure "grep -rac amdgcn-…--gfx" grep -rac 'amdgcn-amd-amdhsa--gfx' "$dir"
)
base=$(printf '%s\n' "$results" | awk -F'\t' 'NR==1 {print $2}')
echo "tree: $dir ($files files, $((bytes / 1048576)) MiB), $(nproc) cores, median of $runs warm runs"
printf '%-26s %9s %11s %12s %10s\n' command seconds files/s "peak RSS" "÷ find"
printf '%s\n' "$results" | awk -F'\t' -v files="$files" -v base="$base" '{
  s = $2 + 0; fps = (s > 0) ? files / s : 0; r = (base > 0) ? s / base : 0
  printf "%-26s %9.3f %11.0f %9.1f MB %9.1fx\n", $1, s, fps, $3 / 1024, r }'

if [ "$(id -u)" = 0 ] && sync && echo 3 2>/dev/null > /proc/sys/vm/drop_caches; then
  cold() { echo 3 > /proc/sys/vm/drop_caches; /usr/bin/time -o /tmp/gfxscan-cold.$$ -f '%e' "$@" >/dev/null 2>&1 || true; tail -1 /tmp/gfxscan-cold.$$; }
  f=$(cold find "$dir" -type f); g=$(cold "$bin" scan -q --json -o /dev/null "$dir")
  echo "cold cache: find ${f}s, gfxscan ${g}s ($(awk -v a="$g" -v b="$f" 'BEGIN {printf "%.1f", a / b}')x find)"
  rm -f /tmp/gfxscan-cold.$$
else
  echo "cold cache: skipped (needs root and a writable /proc/sys/vm/drop_caches)"
fi
