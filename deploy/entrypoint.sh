#!/bin/sh
# gfxscan's container entrypoint: one snapshot per run, written where a merge can find it.
#
#   NODE_NAME   the snapshot's name (a DaemonSet passes the node's name; default: hostname)
#   OUT_DIR     where snapshots go (default /snapshots); the file is $OUT_DIR/$NODE_NAME.json.
#               The last one is reused (`--reuse`): a host file unchanged since is not read
#               again, by the scan or the check
#   IMAGE       optional: a registry image to scan instead of the host (copied with skopeo into
#               an OCI layout, read in place, then removed)
#   ROOTS       optional: what to scan on the host, colon-separated as PATH is (a path may hold
#               spaces); default: gfxscan's usual places, which a DaemonSet mounts under /host
#   GFXSCAN     the binary (default: gfxscan on PATH)
#   METRICS_DIR optional: node-exporter's textfile collector folder. The scan's per-target
#               counts go to gfxscan_scan.prom, and `gfxscan check` of the host install for
#               this node's GPUs (its KFD topology) to gfxscan_check.prom, each written whole
#               and renamed into place. A check that cannot run removes its stale file.
#   SYSFS_ROOT  optional: where the KFD topology is (default /, where a DaemonSet mounts
#               /sys/class/kfd); GPUS optional: check these target IDs instead
#
# Exit status: gfxscan scan's (0 clean, 1 files not read), or 2 when the snapshot cannot be
# written. The check's verdict is in its metrics, not in the exit status.
set -eu
GFXSCAN=${GFXSCAN:-gfxscan}
OUT_DIR=${OUT_DIR:-/snapshots}
NAME=${NODE_NAME:-$(hostname)}
mkdir -p "$OUT_DIR"
out="$OUT_DIR/$NAME.json"
if [ -n "${IMAGE:-}" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  skopeo copy --quiet "docker://$IMAGE" "oci:$work/image:latest"
  set -- "$work/image"
elif [ -n "${ROOTS:-}" ]; then
  # Split at colons only (no globbing): a root may hold spaces.
  old_ifs=$IFS
  IFS=:
  set -f
  # shellcheck disable=SC2086 # split on purpose, at IFS=: only
  set -- $ROOTS
  set +f
  IFS=$old_ifs
else
  set --
  for r in /host/opt/rocm /host/usr/lib/ollama /host/lib/firmware/amdgpu; do
    [ -e "$r" ] && set -- "$@" "$r"
  done
fi
# The host's last snapshot: what it holds of files unchanged since is taken, not read again. An
# image is copied anew each run, so nothing of it is unchanged.
if [ -z "${IMAGE:-}" ]; then
  set -- --reuse "$out" "$@"
fi
status=0
# One scan, two outputs; each is written to a temporary file beside it and renamed into place,
# so neither a merge nor the textfile collector ever reads half a file.
if [ -n "${METRICS_DIR:-}" ]; then
  "$GFXSCAN" scan -q -o "json=$out" -o "prometheus=$METRICS_DIR/gfxscan_scan.prom" "$@" || status=$?
else
  "$GFXSCAN" scan -q -o "json=$out" "$@" || status=$?
fi
# 0: every file read; 1: some not (listed in the snapshot). Anything else: nothing written,
# and no old metrics are left to say what this run could not.
if [ "$status" -gt 1 ]; then
  [ -n "${METRICS_DIR:-}" ] && rm -f "$METRICS_DIR/gfxscan_scan.prom" "$METRICS_DIR/gfxscan_check.prom"
  exit "$status"
fi
echo "gfxscan: $out ($status)"
if [ -n "${METRICS_DIR:-}" ] && [ -z "${IMAGE:-}" ]; then
  prom="$METRICS_DIR/gfxscan_check.prom"
  set -- "$@" --sysfs-root "${SYSFS_ROOT:-/}"
  [ -n "${GPUS:-}" ] && set -- "$@" --gpu "$GPUS"
  checked=0
  "$GFXSCAN" check -q --format prometheus -o "$prom" "$@" || checked=$?
  # 0 OK, 1 missing, 3 incomplete, 4 nothing to check: all verdicts, written. 2: none.
  if [ "$checked" -eq 2 ]; then
    rm -f "$prom"
    echo "gfxscan: check could not run; $prom removed" >&2
  else
    echo "gfxscan: $prom ($checked)"
  fi
fi
exit "$status"
