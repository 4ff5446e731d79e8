#!/usr/bin/env bash
# The GPU check, in two halves.
#
#   bash scripts/gpu-check.sh build   # on the Rust machine: release test and benchmark binaries
#                                     # into the git-ignored gpu-bin/ (stripped and gzipped,
#                                     # about 20 MB, so the folder is easy to ship)
#   bash scripts/gpu-check.sh run     # on a GPU machine with the CUDA 13 driver and PyTorch's
#                                     # python3 (no Rust, no network needed): the GPU tests with
#                                     # DEVTYPE_REQUIRE_CUDA=1, the kernel compile check, the GPU
#                                     # benchmark, PyTorch on the same workloads, a table last.
#
# `run` finds libnvrtc and libcublas in PyTorch's `nvidia-*` wheels (or a CUDA toolkit) and
# puts them on LD_LIBRARY_PATH. It stays within about 8 minutes on one H200; set
# GPU_CHECK_BUDGET_S to change the budget. Results (JSON, logs) go to $OUT when set, else
# gpu-bin/results.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=gpu-bin

die() {
    echo "gpu-check: $*" >&2
    exit 1
}

# Test sources that touch the GPU (their binaries run in `run`); the ui test needs rustc.
gpu_tests() {
    for f in tests/*.rs; do
        name=$(basename "$f" .rs)
        [ "$name" = ui ] && continue
        if grep -qiE 'cuda' "$f"; then
            echo "$name"
        fi
    done
}

build() {
    command -v cargo >/dev/null || die "build needs cargo"
    rm -rf "$BIN"
    mkdir -p "$BIN/tests"
    local wanted
    wanted=" $(gpu_tests | tr '\n' ' ') "
    echo "gpu-check: building release test binaries (GPU tests:$wanted)"
    local args=(--lib)
    for t in $wanted; do args+=(--test "$t"); done
    if ! cargo test --release --no-run --message-format=json "${args[@]}" >"$BIN/build-tests.json" 2>"$BIN/build-tests.log"; then
        # One test that does not compile must not hide the others: build them one by one.
        echo "gpu-check: building all at once failed; building each test on its own"
        : >"$BIN/build-tests.json"
        for a in --lib $(printf -- '--test=%s ' $wanted); do
            if ! cargo test --release --no-run --message-format=json "$a" >>"$BIN/build-tests.json" 2>>"$BIN/build-tests.log"; then
                case "$a" in
                --test=cuda_* | --test=kernels_compile | --lib)
                    tail -n 40 "$BIN/build-tests.log"
                    die "cargo test --no-run $a failed"
                    ;;
                *) echo "gpu-check: warning: $a does not compile; left out" ;;
                esac
            fi
        done
    fi
    echo "gpu-check: building the GPU benchmark"
    cargo bench --bench gpu --no-run --message-format=json >"$BIN/build-bench.json" 2>"$BIN/build-bench.log" ||
        { tail -n 40 "$BIN/build-bench.log"; die "cargo bench --no-run failed"; }
    python3 - "$BIN" "$wanted" <<'EOF' || die "could not collect the binaries"
import json, shutil, subprocess, sys, os
out, wanted = sys.argv[1], sys.argv[2].split()
def artifacts(path):
    for line in open(path):
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("reason") == "compiler-artifact" and msg.get("executable"):
            yield msg["target"], msg["executable"]
copied = []
for target, exe in artifacts(os.path.join(out, "build-tests.json")):
    kind = target["kind"][0]
    name = target["name"]
    if kind == "lib":
        dest = os.path.join(out, "tests", "lib-unit-tests")
    elif kind == "test" and name in wanted:
        dest = os.path.join(out, "tests", name)
    else:
        continue
    shutil.copy(exe, dest)
    copied.append(dest)
for target, exe in artifacts(os.path.join(out, "build-bench.json")):
    if target["name"] == "gpu":
        shutil.copy(exe, os.path.join(out, "bench-gpu"))
        copied.append(os.path.join(out, "bench-gpu"))
for path in copied:
    # No debug info or symbols, then gzip: the folder stays small enough to ship (~20 MB).
    subprocess.run(["strip", "--strip-all", path], check=False)
    subprocess.run(["gzip", "-9", "-n", "-f", path], check=True)
print("gpu-check: copied", len(copied), "binaries")
EOF
    [ -f "$BIN/bench-gpu.gz" ] || die "the gpu benchmark binary is missing"
    rm -f "$BIN"/build-*.json
    du -sh "$BIN" | sed 's/^/gpu-check: gpu-bin holds /'
}

# Unpacks the gzipped binaries of gpu-bin/ into a scratch folder; prints its path.
unpack() {
    local dest="${TMPDIR:-/tmp}/devtype-gpu-bin"
    rm -rf "$dest"
    mkdir -p "$dest/tests"
    local f
    for f in "$BIN"/bench-gpu.gz "$BIN"/tests/*.gz; do
        [ -f "$f" ] || continue
        local rel=${f#"$BIN"/}
        gunzip -c "$f" >"$dest/${rel%.gz}"
        chmod +x "$dest/${rel%.gz}"
    done
    echo "$dest"
}

# Folders holding libnvrtc / libcublas: PyTorch's nvidia wheels, torch/lib, a CUDA toolkit.
cuda_lib_dirs() {
    python3 - <<'EOF' 2>/dev/null
import glob, os, site, sys
roots = set()
for p in sys.path + site.getsitepackages() + [site.getusersitepackages()]:
    if p and os.path.isdir(p):
        roots.add(p)
dirs = []
for root in sorted(roots):
    for pattern in ("nvidia/*/lib", "torch/lib"):
        for d in glob.glob(os.path.join(root, pattern)):
            if any(glob.glob(os.path.join(d, n)) for n in ("libnvrtc.so*", "libcublas.so*", "libcublasLt.so*")):
                dirs.append(d)
for d in sorted(glob.glob("/usr/local/cuda*/lib64")) + ["/usr/lib/x86_64-linux-gnu"]:
    if glob.glob(os.path.join(d, "libnvrtc.so*")) or glob.glob(os.path.join(d, "libcublas.so*")):
        dirs.append(d)
seen = []
for d in dirs:
    if d not in seen:
        seen.append(d)
print(":".join(seen))
EOF
}

run() {
    [ -f "$BIN/bench-gpu.gz" ] || die "no binaries in $BIN: run 'bash scripts/gpu-check.sh build' first"
    local exes
    exes=$(unpack)
    local budget=${GPU_CHECK_BUDGET_S:-470}
    local start=$SECONDS
    local results=${OUT:-$BIN/results}
    mkdir -p "$results"
    local libs
    libs=$(cuda_lib_dirs)
    export LD_LIBRARY_PATH="${libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export DEVTYPE_REQUIRE_CUDA=1 DEVTYPE_REQUIRE_NVRTC=1
    echo "gpu-check: CUDA libraries from: ${libs:-<none found>}"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    local summary=()
    local failed=0
    # Kernel compile check and the dynamic/typed GPU tests first, then the rest.
    local order=(kernels_compile cuda_runtime cuda_ops cuda_sync cuda_oom lib-unit-tests)
    for t in "$exes"/tests/*; do
        local n
        n=$(basename "$t")
        [[ " ${order[*]} " == *" $n "* ]] || order+=("$n")
    done
    for n in "${order[@]}"; do
        local exe="$exes/tests/$n"
        [ -x "$exe" ] || continue
        local left=$((budget - 150 - (SECONDS - start)))
        if [ "$left" -lt 20 ]; then
            summary+=("$(printf '%-22s %s' "$n" "SKIPPED (time budget)")")
            continue
        fi
        local t0=$SECONDS
        timeout "$left" "$exe" --test-threads=8 >"$results/$n.log" 2>&1
        local rc=$?
        local line
        line=$(grep -E '^test result:' "$results/$n.log" | tail -n 1)
        if [ $rc -eq 0 ]; then
            summary+=("$(printf '%-22s ok   %4ss  %s' "$n" $((SECONDS - t0)) "${line#test result: }")")
        else
            failed=1
            summary+=("$(printf '%-22s FAIL %4ss  rc=%s %s' "$n" $((SECONDS - t0)) "$rc" "${line#test result: }")")
            echo "---- $n failed (rc=$rc), last lines of $results/$n.log:"
            grep -E 'panicked|FAILED|failed|error' "$results/$n.log" | head -n 30
        fi
    done
    echo "---- GPU benchmark"
    local left=$((budget - (SECONDS - start)))
    timeout $((left > 60 ? left - 60 : 30)) "$exes/bench-gpu" --json "$results/devtype.json" 2>&1 | tee "$results/bench-gpu.log"
    echo "---- PyTorch on the same workloads"
    left=$((budget - (SECONDS - start)))
    timeout $((left > 20 ? left : 20)) python3 scripts/gpu_torch_bench.py --devtype "$results/devtype.json" --table "$results/table.txt" >"$results/torch.log" 2>&1 || true
    echo
    echo "==== devtype GPU check: tests (logs in $results), $((SECONDS - start)) s"
    printf '%s\n' "${summary[@]}"
    echo "==== benchmarks"
    if [ -s "$results/table.txt" ]; then
        cat "$results/table.txt"
    else
        cat "$results/bench-gpu.log" "$results/torch.log" 2>/dev/null | tail -n 12
    fi
    return $failed
}

case "${1:-}" in
build) build ;;
run) run ;;
*)
    echo "usage: bash scripts/gpu-check.sh build|run" >&2
    exit 2
    ;;
esac
