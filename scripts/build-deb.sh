#!/usr/bin/env bash
# Builds gfxscan's Debian package: the release binary, its manual pages (gfxscan(1) and one per
# subcommand, as `gfxscan man` writes them) and its bash, zsh and fish completions, packaged by
# cargo-deb as Cargo.toml's [package.metadata.deb] lists them. Prints the .deb's path.
#
#   scripts/build-deb.sh            # needs cargo-deb (`cargo install --locked cargo-deb`)
#   CARGO_DEB=/path/to/cargo-deb scripts/build-deb.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
# The binary is where cargo built it (CARGO_TARGET_DIR, else target/); what this script makes
# goes to target/ of the checkout, where Cargo.toml's [package.metadata.deb] assets name it.
bin="${CARGO_TARGET_DIR:-target}/release/gfxscan"
out=target/deb
rm -rf "$out" && mkdir -p "$out/man" "$out/completions"
"$bin" man > "$out/man/gfxscan.1"
# Every subcommand but `help`, as clap lists them.
for sub in $("$bin" --help | sed -n '/^Commands:/,/^$/p' | awk '/^  [a-z]/ && $1 != "help" {print $1}'); do
  "$bin" man "$sub" > "$out/man/gfxscan-$sub.1"
done
gzip -9n "$out"/man/*.1
"$bin" completions bash > "$out/completions/gfxscan"
"$bin" completions zsh > "$out/completions/_gfxscan"
"$bin" completions fish > "$out/completions/gfxscan.fish"
"${CARGO_DEB:-cargo-deb}" --no-build --quiet --output target/debian/ >/dev/null
ls target/debian/gfxscan_*.deb | tail -n 1
