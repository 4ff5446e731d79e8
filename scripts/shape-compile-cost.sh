#!/usr/bin/env bash
# The compile cost of static shapes (issue 31's goals, dev profile, 2 cores): the 10-layer
# static MLP of examples/static_mlp10.rs must check incrementally in under 5 s after an edit of
# the example, and build from nothing (dependencies included) in under 60 s.
#
#   scripts/shape-compile-cost.sh            # run it on a quiet machine
#   JOBS=2 KEEP=1 scripts/shape-compile-cost.sh
#
# It builds in its own target dir (target/shape-compile-cost, removed first unless KEEP=1), so
# the usual target/ is left alone. Each figure is printed as wall-clock and CPU (user + sys)
# seconds: on a loaded machine only the CPU figure means anything.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-2}
T=${CARGO_TARGET_DIR_COST:-target/shape-compile-cost}
export CARGO_TARGET_DIR=$T
LOG=$T/cost.log
[ "${KEEP:-0}" = 1 ] || rm -rf "$T"
mkdir -p "$T"
: > "$LOG"

# run LABEL CMD...: prints LABEL, wall and CPU seconds of CMD (its output goes to $LOG).
run() {
    local label=$1
    shift
    local t0 t1 r0 r1
    t0=$(date +%s.%N)
    r0=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
    ( "$@" >>"$LOG" 2>&1 ) || { echo "failed: $* (see $LOG)"; exit 1; }
    t1=$(date +%s.%N)
    # CPU of finished children of this shell: user + sys + cutime + cstime, in clock ticks.
    r1=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
    printf '%-58s wall %7.2f s   cpu %7.2f s\n' "$label" \
        "$(echo "$t1 - $t0" | bc)" "$(echo "($r1 - $r0) / $(getconf CLK_TCK)" | bc -l)"
}

echo "devtype $(git rev-parse --short HEAD), $(rustc --version), $JOBS jobs, load: $(cut -d' ' -f1-3 /proc/loadavg)"
run "clean build (deps + lib + example), cargo build -j $JOBS" \
    cargo build -j "$JOBS" --example static_mlp10
run "first check (lib metadata), cargo check" \
    cargo check -j "$JOBS" --example static_mlp10
touch examples/static_mlp10.rs
run "incremental check after an edit of the example" \
    cargo check -j "$JOBS" --example static_mlp10
touch examples/static_mlp10.rs
run "incremental build after an edit of the example" \
    cargo build -j "$JOBS" --example static_mlp10
touch src/shaped/ops.rs
run "check after an edit of the library (src/shaped/ops.rs)" \
    cargo check -j "$JOBS" --example static_mlp10
echo "goals: incremental check < 5 s, clean build < 60 s (wall, on a quiet 2-core machine)"
