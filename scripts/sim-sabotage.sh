#!/usr/bin/env bash
# Proves that the simulated CUDA device (sim/) catches GPU bugs: in a scratch copy of the
# repository, plants one defect of each kind, runs the GPU tests that cover it under
# scripts/cuda-sim.sh with DEVTYPE_REQUIRE_CUDA=1, and requires them to FAIL. Exits non-zero
# when a planted defect passes unnoticed (or when a plant no longer applies to the source).
#
#   scripts/sim-sabotage.sh              every defect
#   scripts/sim-sabotage.sh oob uaf      some of them (names below)
#
# Each defect rebuilds devtype's debug test binary and the simulated kernels that changed
# (a minute or two each on 2 cores), in its own target folder (SABOTAGE_TARGET_DIR, default
# target/sim-sabotage, kept between runs) so that it never waits for this checkout's builds.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
(cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$scratch")

# plant NAME FILE OLD NEW: replaces the one occurrence of OLD by NEW in FILE.
plant() {
    python3 - "$scratch/$2" "$3" "$4" <<'PY'
import sys
path, old, new = sys.argv[1:]
text = open(path).read()
if text.count(old) != 1:
    sys.exit(f"sim-sabotage: the plant does not apply to {path} (found {text.count(old)} times): {old!r}")
open(path, "w").write(text.replace(old, new))
PY
}

declare -A file old new tests what
what[off_by_one]="kernel off by one: the element-wise map skips the last element of a contiguous run"
file[off_by_one]=kernels/common.cuh
old[off_by_one]='for (u64 i = done + start; i < n; i += step) out[i] = f(a[i]);'
new[off_by_one]='for (u64 i = done + start; i + 1 < n; i += step) out[i] = f(a[i]);'
tests[off_by_one]="cuda_ops"

what[swapped_args]="two launch arguments swapped: amp_update_scale gets backoff_factor as growth_factor"
file[swapped_args]=src/ops/amp/cuda.rs
old[swapped_args]='(s.growth_factor, s.backoff_factor, s.growth_interval),'
new[swapped_args]='(s.backoff_factor, s.growth_factor, s.growth_interval),'
tests[swapped_args]="amp"

what[missing_wait]="missing wait: the compute stream does not wait for the pinned upload on the copy stream"
file[missing_wait]=src/ops/copy/cuda.rs
old[missing_wait]='        gpu.stream
            .wait(&copied)
            .map_err(|e| gpu.error("cuStreamWaitEvent", e))?;'
new[missing_wait]=''
tests[missing_wait]="cuda_pinned"

what[oob]="out-of-bounds write: fill writes one element past the end"
file[oob]=kernels/creation.cu
old[oob]='    for (u64 i = done + start; i < n; i += step) out[i] = value;'
new[oob]='    for (u64 i = done + start; i <= n; i += step) out[i] = value;'
tests[oob]="cuda_ops"

what[uninit]="read of uninitialised memory: zeros() skips its memset"
file[uninit]=src/backend/cuda/memory.rs
old[uninit]='    let mut slice = alloc::<T>(gpu, len)?;
    gpu.stream
        .memset_zeros(&mut slice)
        .map_err(|e| gpu.error("cuMemsetD8Async", e))?;'
new[uninit]='    let slice = alloc::<T>(gpu, len)?;'
tests[uninit]="cuda_ops"

what[uaf]="use after free: the pinned upload frees its destination on the copy stream while the tensor uses it"
file[uaf]=src/ops/copy/cuda.rs
old[uaf]='        let slice = unsafe { gpu.stream.upgrade_device_ptr::<T>(dst, n) };'
new[uaf]='        let slice = unsafe { gpu.stream.upgrade_device_ptr::<T>(dst, n) };
        let _ = unsafe { cudarc::driver::result::free_async(dst, copy.cu_stream()) };'
tests[uaf]="cuda_pinned"

what[grid_limit]="grid dimension past the limit: element-wise launches ask for gridDim.y = 65536"
file[grid_limit]=src/backend/cuda/launch.rs
old[grid_limit]='        grid_dim: (wanted.min(cap) as u32, 1, 1),'
new[grid_limit]='        grid_dim: (wanted.min(cap) as u32, 65536, 1),'
tests[grid_limit]="cuda_ops"

all=(off_by_one swapped_args missing_wait oob uninit uaf grid_limit)
chosen=("${@:-${all[@]}}")
export CARGO_TARGET_DIR="${SABOTAGE_TARGET_DIR:-$root/target/sim-sabotage}"
export DEVTYPE_SIM_DIR="$scratch/target-sim"
export DEVTYPE_REQUIRE_CUDA=1
export DEVTYPE_KERNEL_CACHE="$scratch/kernel-cache"
caught=0
missed=()
for name in "${chosen[@]}"; do
    [ -n "${file[$name]:-}" ] || { echo "sim-sabotage: no defect named $name (${all[*]})" >&2; exit 2; }
    echo "== $name: ${what[$name]}"
    cp "$root/${file[$name]}" "$scratch/${file[$name]}"
    plant "$name" "${file[$name]}" "${old[$name]}" "${new[$name]}"
    args=()
    for t in ${tests[$name]}; do args+=(--test "$t"); done
    log="$scratch/$name.log"
    if (cd "$scratch" && timeout 1800 bash scripts/cuda-sim.sh cargo test -q "${args[@]}") >"$log" 2>&1; then
        echo "   MISSED: the tests passed with the defect planted"
        missed+=("$name")
    else
        echo "   caught:"
        { grep -E "devtype-sim:|panicked at|^test result|FAILED|error\[" "$log" || tail -n 5 "$log"; } |
            head -n 6 | sed 's/^/     /' || true
        caught=$((caught + 1))
    fi
    cp "$root/${file[$name]}" "$scratch/${file[$name]}"
    touch "$scratch/${file[$name]}"
done
echo
echo "sim-sabotage: ${caught} of ${#chosen[@]} planted defects caught${missed:+; missed: ${missed[*]}}"
[ ${#missed[@]} -eq 0 ]
