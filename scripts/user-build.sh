#!/usr/bin/env bash
# A user's build of devtype, measured: a throwaway crate (outside the repository) that depends
# on devtype by path, with scripts/user-build/main.rs (a small MLP trained in a loop) as its
# main.rs. It is built in release, one line of main.rs is changed, and the rebuild is timed.
#
# Prints: the rebuild's wall and CPU seconds, the binary's size (as built and stripped), the
# number and bytes of devtype functions in the binary, and how many of them the user's crate
# compiled itself (monomorphised there: what every rebuild pays), grouped by function.
#
#   scripts/user-build.sh                 # release (the goal: <= 10 s rebuild, <= 8 MB)
#   PROFILE=dev scripts/user-build.sh     # the same for a debug build
#   KEEP=1 scripts/user-build.sh          # keep the crate (its path is printed)
#   RUN=1 scripts/user-build.sh           # also run the program (10 epochs) and time it
#   PROFILE=dev DEPS_OPT=3 RUN=1 scripts/user-build.sh
#                                         # a debug build with the dependencies optimised
#                                         # ([profile.dev.package."*"] opt-level = 3)
#
# CARGO_TARGET_DIR may point at a target directory to share (the first build then reuses the
# dependencies already built there); by default the crate gets its own. Wall-clock figures
# are only meaningful on an otherwise idle machine: CPU seconds are steadier under load.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
profile="${PROFILE:-release}"
work="$(mktemp -d "${TMPDIR:-/tmp}/devtype-user-build.XXXXXX")"
if [[ -z "${KEEP:-}" ]]; then
    trap 'rm -rf "$work"' EXIT
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$work/target}"
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

mkdir -p "$work/src"
cat >"$work/Cargo.toml" <<TOML
[package]
name = "devtype-user"
version = "0.1.0"
edition = "2021"

[dependencies]
devtype = { path = "$repo" }

[workspace]
TOML
if [[ -n "${DEPS_OPT:-}" ]]; then
    printf '\n[profile.dev.package."*"]\nopt-level = %s\n' "$DEPS_OPT" >>"$work/Cargo.toml"
fi
cp "$repo/scripts/user-build/main.rs" "$work/src/main.rs"
# The versions the repository is tested with.
cp "$repo/Cargo.lock" "$work/"
# The user's crate brings the repository's pinned toolchain with it.
cp "$repo/rust-toolchain.toml" "$work/"

case "$profile" in
    release) flag=(--release) dir=release ;;
    dev) flag=() dir=debug ;;
    *) echo "PROFILE is release or dev" >&2; exit 2 ;;
esac
bin="$CARGO_TARGET_DIR/$dir/devtype-user"

cd "$work"
echo "== first build ($profile; dependencies included) in $work"
cargo build "${flag[@]}" --quiet

# The one-line change: the text of a println! in the training loop.
sed -i 's/"epoch {:>2}: loss/"epoch {:>2}: mean loss/' src/main.rs
grep -q 'mean loss' src/main.rs

tfile="$work/time.txt"
/usr/bin/time -f '%e %U %S' -o "$tfile" cargo build "${flag[@]}" --quiet --timings
read -r wall user sys <"$tfile"
cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
echo "== rebuild after a one-line change ($profile)"
echo "wall ${wall} s, CPU ${cpu} s (user ${user} + sys ${sys})"
echo "timings: $(ls -t "$CARGO_TARGET_DIR"/cargo-timings/cargo-timing-*.html 2>/dev/null | head -1)"

mb() { awk -v b="$1" 'BEGIN { printf "%.2f MB", b / 1e6 }'; }
size=$(stat -c %s "$bin")
strip -o "$work/stripped" "$bin"
stripped=$(stat -c %s "$work/stripped")
echo "== binary: $(mb "$size") as built, $(mb "$stripped") stripped"

# devtype's functions in the binary (text symbols), with their bytes.
syms="$work/syms.txt"
nm -C -t d --size-sort --defined-only "$bin" | awk '$2 ~ /^[tTwW]$/' >"$syms"
devtype_n=$(grep -c 'devtype::' "$syms" || true)
devtype_bytes=$(grep 'devtype::' "$syms" | awk '{ s += ($1 + 0) } END { print s + 0 }')
all_bytes=$(awk '{ s += ($1 + 0) } END { print s + 0 }' "$syms")
echo "devtype functions in the binary: $devtype_n, $(mb "$devtype_bytes") of $(mb "$all_bytes") of code"

# What the user's crate compiled itself: its own object code (every function it
# monomorphised, devtype's generic code included). One more build of the user's crate only.
objdir="$work/obj"
mkdir -p "$objdir"
cargo rustc "${flag[@]}" --quiet --bin devtype-user -- --emit=obj="$objdir/user.o" -C codegen-units=1 >/dev/null
nm -C -t d --size-sort --defined-only "$objdir/user.o" | awk '$2 ~ /^[tTwW]$/' >"$work/user-syms.txt"
user_n=$(wc -l <"$work/user-syms.txt")
user_dev=$(grep -c 'devtype::' "$work/user-syms.txt" || true)
user_bytes=$(awk '{ s += ($1 + 0) } END { print s + 0 }' "$work/user-syms.txt")
echo "compiled in the user's crate: $user_n functions ($(mb "$user_bytes")), of which $user_dev are devtype's"
echo "-- the user crate's largest groups (functions, bytes; generic arguments erased):"
# Group by the path with generic arguments and hashes removed.
awk '{ size = ($1 + 0); $1 = ""; $2 = ""; name = substr($0, 3);
       while (gsub(/<[^<>]*>/, "", name)) {}
       sub(/::h[0-9a-f]{16}$/, "", name);
       n[name]++; b[name] += size }
     END { for (k in n) printf "%8d %4d  %s\n", b[k], n[k], k }' "$work/user-syms.txt" |
    sort -rn | head -25

if [[ -n "${RUN:-}" ]]; then
    echo "== run (10 epochs)"
    /usr/bin/time -f 'wall %e s, CPU %U+%S s' "$bin" 10 | tail -2
fi
[[ -n "${KEEP:-}" ]] && echo "kept: $work"
exit 0
