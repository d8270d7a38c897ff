#!/bin/sh
# gfxscan's container entrypoint: one snapshot per run, written where a merge can find it.
#
#   NODE_NAME   the snapshot's name (a DaemonSet passes the node's name; default: hostname)
#   OUT_DIR     where snapshots go (default /snapshots); the file is $OUT_DIR/$NODE_NAME.json
#   IMAGE       optional: a registry image to scan instead of the host (copied with skopeo into
#               an OCI layout, read in place, then removed)
#   ROOTS       optional: what to scan on the host, colon-separated as PATH is (a path may hold
#               spaces); default: gfxscan's usual places, which a DaemonSet mounts under /host
#   GFXSCAN     the binary (default: gfxscan on PATH)
#
# Exit status: gfxscan's (0 clean, 1 files not read), or 2 when the snapshot cannot be written.
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
status=0
"$GFXSCAN" scan -q --json -o "$out.part" "$@" || status=$?
# 0: every file read; 1: some not (listed in the snapshot). Anything else: no snapshot.
if [ "$status" -gt 1 ]; then
  rm -f "$out.part"
  exit "$status"
fi
mv "$out.part" "$out"
echo "gfxscan: $out ($status)"
exit "$status"
