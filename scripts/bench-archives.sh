#!/usr/bin/env bash
# Benchmark: scanning packages in place against unpacking them, in the same run.
#
#   bash scripts/bench-archives.sh [DEBS_DIR] [RUNS]
#
# DEBS_DIR defaults to $GFXSCAN_DEBIAN_CORPUS/debs or ~/gfxscan-corpus/debs (the .deb files that
# ../shared/corpus/fetch-debian.sh downloads). For each of the largest packages (and for all of
# them together) it times, warm, median of RUNS (default 3):
#   gfxscan scan PKG           reading the package in place
#   dpkg -x PKG TMP            unpacking it (what users do today before `strings`/`grep`)
#   xz/zstd/gzip -dc data.tar  decompressing its payload alone: the floor for any reader
# and prints each as seconds and as a ratio to `dpkg -x`, plus gfxscan's peak RSS.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-${GFXSCAN_DEBIAN_CORPUS:-$HOME/gfxscan-corpus}/debs}
runs=${2:-3}
[ -d "$dir" ] || { echo "no packages at $dir: run ../shared/corpus/fetch-debian.sh first" >&2; exit 2; }
command -v /usr/bin/time >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }
(cd "$here" && cargo build --release --quiet)
bin=$here/target/release/gfxscan
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# median CMD...: median wall seconds of $runs runs after a warm-up.
median() {
  "$@" >/dev/null 2>&1 || true
  local t0 t1 times=()
  for _ in $(seq "$runs"); do
    t0=$EPOCHREALTIME
    "$@" >/dev/null 2>&1 || true
    t1=$EPOCHREALTIME
    times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')")
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'
}

unpack() { rm -rf "$tmp/x" && mkdir "$tmp/x" && dpkg -x "$1" "$tmp/x"; }

# payload PKG: decompress data.tar.* to nothing, with the tool its magic names.
payload() {
  local m
  m=$(ar p "$1" "$(ar t "$1" | grep '^data\.tar')" | head -c 6 | od -An -tx1 | tr -d ' \n')
  case $m in
    fd377a585a00) ar p "$1" "$(ar t "$1" | grep '^data\.tar')" | xz -dc >/dev/null ;;
    28b52ffd*) ar p "$1" "$(ar t "$1" | grep '^data\.tar')" | zstd -dcq >/dev/null ;;
    1f8b*) ar p "$1" "$(ar t "$1" | grep '^data\.tar')" | gzip -dc >/dev/null ;;
    *) ar p "$1" "$(ar t "$1" | grep '^data\.tar')" >/dev/null ;;
  esac
}
export -f payload unpack
export tmp

mapfile -t largest < <(find "$dir" -name '*.deb' -printf '%s\t%p\n' | sort -rn | head -5 | cut -f2)
mapfile -t all < <(find "$dir" -name '*.deb' | sort)

printf 'packages under %s, %s cores, median of %s warm runs\n' "$dir" "$(nproc)" "$runs"
printf '%-46s %8s %9s %9s %9s %8s %8s %9s\n' package MiB "gfxscan" "dpkg -x" "payload" "÷ dpkg" "÷ floor" "peak RSS"
row() {
  local name=$1 size=$2 g d p rss
  shift 2
  g=$(median "$bin" scan -q --json -o /dev/null "$@")
  d=$(median bash -c 'for f; do unpack "$f"; done' _ "$@")
  p=$(median bash -c 'for f; do payload "$f"; done' _ "$@")
  rss=$(/usr/bin/time -f '%M' "$bin" scan -q --json -o /dev/null "$@" 2>&1 >/dev/null | tail -1)
  awk -v n="$name" -v s="$size" -v g="$g" -v d="$d" -v p="$p" -v r="$rss" 'BEGIN {
    printf "%-46s %8.0f %8.2fs %8.2fs %8.2fs %7.2fx %7.2fx %6.0f MB\n", n, s / 1048576, g, d, p, g / d, g / p, r / 1024 }'
}
for f in "${largest[@]}"; do
  row "$(basename "$f")" "$(stat -c %s "$f")" "$f"
done
row "all ${#all[@]} packages (one gfxscan run)" "$(cat "${all[@]}" | wc -c)" "${all[@]}"
