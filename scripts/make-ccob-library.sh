#!/usr/bin/env bash
# Builds a ROCm 7.x-style host library from a plain one: every offload bundle of its
# `.hip_fatbin` is unbundled and bundled again with `clang-offload-bundler --compress` (LLVM's
# own tool, Debian's clang-tools-19: a CCOB per bundle, as `--offload-compress` builds ship), and
# the bundles are linked into a new shared library's `.hip_fatbin`. ROCm 7.x ships rocSOLVER
# this way; no such real library is at hand here, so the benchmark of "one large library" of
# compressed bundles is made from Debian's rocSOLVER 6.4 (235 bundles, 1.9 GB).
#
#   scripts/make-ccob-library.sh LIBRARY OUT_DIR
#
# Needs: clang-tools-19 (clang-offload-bundler), binutils, gcc, python3.
set -euo pipefail
lib=${1:?usage: $0 LIBRARY OUT_DIR}
out=${2:?usage: $0 LIBRARY OUT_DIR}
bundler=${BUNDLER:-/usr/lib/llvm-19/bin/clang-offload-bundler}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
objcopy -O binary --only-section=.hip_fatbin "$lib" "$work/fatbin.bin"
python3 - "$work" "$bundler" <<'PY'
import os, struct, subprocess, sys
work, bundler = sys.argv[1], sys.argv[2]
data = open(os.path.join(work, "fatbin.bin"), "rb").read()
magic = b"__CLANG_OFFLOAD_BUNDLE__"
pos, n, parts = 0, 0, []
while (start := data.find(magic, pos)) >= 0:
    count = struct.unpack_from("<Q", data, start + 24)[0]
    p, end, ids = start + 32, start, []
    for _ in range(count):
        off, size, idlen = struct.unpack_from("<QQQ", data, p)
        p += 24
        # The host entry is written `host-<triple>-` (empty environment); the tool takes it
        # without the trailing dash.
        ids.append(data[p:p + idlen].decode().rstrip("-") if data[p:p + 4] == b"host" else data[p:p + idlen].decode())
        p += idlen
        end = max(end, start + off + size)
    plain = os.path.join(work, f"b{n}.plain")
    open(plain, "wb").write(data[start:end])
    outs = [os.path.join(work, f"b{n}.{i}") for i in range(len(ids))]
    subprocess.run([bundler, "--unbundle", "--type=o", f"--input={plain}", f"--targets={','.join(ids)}"]
                   + [f"--output={o}" for o in outs], check=True)
    packed = os.path.join(work, f"b{n}.ccob")
    subprocess.run([bundler, "--type=o", "--compress", f"--targets={','.join(ids)}", f"--output={packed}"]
                   + [f"--input={o}" for o in outs], check=True)
    for f in outs + [plain]:
        os.remove(f)
    parts.append(packed)
    pos, n = end, n + 1
with open(os.path.join(work, "fatbin.s"), "w") as s:
    s.write('.section .hip_fatbin,"a"\n')
    for f in parts:
        s.write(f'.p2align 12\n.incbin "{f}"\n')
print(f"{n} bundles compressed", file=sys.stderr)
PY
name=$(basename "$lib")
gcc -shared -nostdlib -o "$out/$name" "$work/fatbin.s"
ls -l "$out/$name"
