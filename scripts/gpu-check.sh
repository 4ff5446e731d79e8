#!/usr/bin/env bash
# The GPU check, in two halves.
#
#   bash scripts/gpu-check.sh build   # on the Rust machine: release test and benchmark binaries
#                                     # (stripped, xz-packed) and the kernels compiled for sm_90
#                                     # by NVRTC, into the git-ignored gpu-bin/ (under 64 MiB)
#   bash scripts/gpu-check.sh list    # the test files whose binaries `run` runs (CI runs the
#                                     # same ones on the simulated GPU)
#   bash scripts/gpu-check.sh run     # on a GPU machine with the CUDA 13 driver and PyTorch's
#                                     # python3 (no Rust, no network needed): the GPU tests with
#                                     # DEVTYPE_REQUIRE_CUDA=1, the GPU benchmark, PyTorch on the
#                                     # same workloads, a table last; one GPU test binary
#                                     # under compute-sanitizer's memcheck where the tool is.
#
# `run` picks one folder holding libnvrtc, libcublas and libcublasLt (CUDA 13: PyTorch's
# `nvidia-*` wheels or a toolkit) and puts a folder of unversioned links to exactly those files
# first on LD_LIBRARY_PATH, so the libraries cannot come from two versions. Kernels load from the
# shipped CUBINs (gpu-bin/kernels, through DEVTYPE_KERNEL_CACHE) when their key matches this
# NVRTC, else NVRTC compiles them once for all processes. Each binary runs under its own time cap
# (GPU_CHECK_CAP_S, 120 s) and the whole run stays within GPU_CHECK_BUDGET_S (440 s), so it ends
# within 8 minutes on one H200 even when everything fails or hangs.
#
# Results: $OUT (else gpu-bin/results) receives exactly three files: summary.txt (per binary:
# status, time, test counts, and the assertion messages of failures; the libraries loaded; the
# benchmark), table.txt (devtype against PyTorch) and logs.tgz (every log and the JSON).
#
# Without a GPU, `run` is a dry run: it finishes in seconds, every GPU binary fails with the
# reason, and the three files are still written (.ci/run checks this).
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=gpu-bin

die() {
    echo "gpu-check: $*" >&2
    exit 1
}

# Test sources that touch the GPU (their binaries run in `run`): those that name CUDA, and
# every one that opens a GPU as .ci/run's simulator step finds them (a test that only says
# "GPU", `common::gpu()`, must run on the real one too). Left out: the ui test (needs rustc),
# kernels_compile (needs no GPU, reads the source tree; `build` runs it instead) and
# broken_libraries (a CPU check of the loader that needs a C compiler).
gpu_tests() {
    for f in tests/*.rs; do
        name=$(basename "$f" .rs)
        case "$name" in
        ui | kernels_compile | broken_libraries) continue ;;
        esac
        if grep -qiE 'cuda' "$f" ||
            grep -qE 'common::(second_)?gpu\(|cuda::is_available\(|Cuda::<[0-9]+>::open\(' "$f"; then
            echo "$name"
        fi
    done
}

# Compiles every kernel file for sm_90 with the NVRTC wheel into gpu-bin/kernels, through the
# release kernels_compile binary (devtype's own loader writes its on-disk cache entries).
# With GPU_CHECK_KERNELS_FROM=DIR, a kernel cache that scripts/check-kernels.sh has just filled
# from these sources (CI), the sm_90 CUBINs are copied from there instead of compiled again.
build_kernels() {
    local files
    files=$(ls kernels/*.cu | wc -l)
    if [ -n "${GPU_CHECK_KERNELS_FROM:-}" ]; then
        rm -rf "$BIN/kernels"
        mkdir -p "$BIN/kernels"
        cp "$GPU_CHECK_KERNELS_FROM"/*-sm_90-*.cubin "$BIN/kernels/" 2>/dev/null
        local n
        n=$(find "$BIN/kernels" -name '*-sm_90-*.cubin' | wc -l)
        [ "$n" -eq "$files" ] || die "$GPU_CHECK_KERNELS_FROM holds $n sm_90 CUBINs for $files kernel files"
        echo "gpu-check: $n CUBINs for sm_90 copied from $GPU_CHECK_KERNELS_FROM ($(du -sh "$BIN/kernels" | cut -f1))"
        return 0
    fi
    # shellcheck source=scripts/nvrtc-env.sh
    . scripts/nvrtc-env.sh
    if ! nvrtc_env; then
        echo "gpu-check: warning: no NVRTC wheel; gpu-bin/ ships no CUBINs (the GPU run compiles them)"
        return 0
    fi
    local exe
    exe=$(python3 - "$BIN/build-tests.json" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("reason") == "compiler-artifact" and msg.get("executable") and msg["target"]["name"] == "kernels_compile":
        print(msg["executable"])
EOF
)
    exe=$(echo "$exe" | tail -n 1)
    [ -x "$exe" ] || die "the kernels_compile binary is missing"
    rm -rf "$BIN/kernels"
    echo "gpu-check: compiling the kernels for sm_90 with NVRTC from $NVRTC_LIB"
    LD_LIBRARY_PATH="$NVRTC_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" DEVTYPE_REQUIRE_NVRTC=1 \
        DEVTYPE_KERNEL_CACHE="$BIN/kernels" \
        "$exe" --exact every_kernel_file_compiles_for_sm_90_without_warnings >"$BIN/build-kernels.log" 2>&1 ||
        { tail -n 40 "$BIN/build-kernels.log"; die "the kernels do not compile"; }
    local n
    n=$(find "$BIN/kernels" -name '*-sm_90-*.cubin' | wc -l)
    [ "$n" -gt 0 ] || die "no CUBIN was written to $BIN/kernels"
    echo "gpu-check: $n CUBINs for sm_90 in $BIN/kernels ($(du -sh "$BIN/kernels" | cut -f1))"
}

build() {
    command -v cargo >/dev/null || die "build needs cargo"
    rm -rf "$BIN"
    mkdir -p "$BIN/tests"
    local wanted
    wanted=" $(gpu_tests | tr '\n' ' ') "
    # GPU_CHECK_PROFILE=dev builds debug binaries instead (CI's dry run: they are already built
    # by `cargo test`, so the dry run costs seconds, not a release build).
    local profile=(--release) bench=(cargo bench --bench gpu --no-run)
    if [ "${GPU_CHECK_PROFILE:-release}" = dev ]; then
        profile=()
        bench=(cargo build --bench gpu)
    fi
    echo "gpu-check: building ${profile[*]:-debug} test binaries (GPU tests:$wanted)"
    local args=(--lib --test kernels_compile)
    for t in $wanted; do args+=(--test "$t"); done
    if ! cargo test "${profile[@]}" --no-run --message-format=json "${args[@]}" >"$BIN/build-tests.json" 2>"$BIN/build-tests.log"; then
        # One test that does not compile must not hide the others: build them one by one.
        echo "gpu-check: building all at once failed; building each test on its own"
        : >"$BIN/build-tests.json"
        for a in --lib --test=kernels_compile $(printf -- '--test=%s ' $wanted); do
            if ! cargo test "${profile[@]}" --no-run --message-format=json "$a" >>"$BIN/build-tests.json" 2>>"$BIN/build-tests.log"; then
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
    "${bench[@]}" --message-format=json >"$BIN/build-bench.json" 2>"$BIN/build-bench.log" ||
        { tail -n 40 "$BIN/build-bench.log"; die "cargo bench --no-run failed"; }
    build_kernels
    # CUBINs shrink about 4x gzipped (`run` unpacks them): the folder must ship in 64 MiB.
    gzip -9 -n -f "$BIN"/kernels/*.cubin
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
# No debug info or symbols, then xz (a third smaller than gzip -9 on these binaries: the
# folder must ship in 64 MiB); `run` unpacks with Python's lzma, which the GPU machine has.
# The dry run's debug binaries (never shipped) take the fast preset.
import lzma
from concurrent.futures import ThreadPoolExecutor
preset = 1 if os.environ.get("GPU_CHECK_PROFILE", "release") == "dev" else 6
def pack(path):
    subprocess.run(["strip", "--strip-all", path], check=False)
    with open(path, "rb") as f:
        data = lzma.compress(f.read(), preset=preset)
    with open(path + ".xz", "wb") as f:
        f.write(data)
    os.remove(path)
with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
    list(pool.map(pack, copied))
print("gpu-check: copied", len(copied), "binaries")
EOF
    [ -f "$BIN/bench-gpu.xz" ] || die "the gpu benchmark binary is missing"
    rm -f "$BIN"/build-*.json
    local kib
    kib=$(du -sk "$BIN" | cut -f1)
    echo "gpu-check: gpu-bin holds $((kib / 1024)) MiB ($kib KiB)"
    # Only what ships counts: debug binaries (GPU_CHECK_PROFILE=dev, CI's dry run) never do.
    if [ "${GPU_CHECK_PROFILE:-release}" != dev ]; then
        [ "$kib" -lt $((60 * 1024)) ] || die "gpu-bin/ is over 60 MiB: it will not ship in 64 MiB"
    fi
}

# Unpacks the xz-packed binaries of gpu-bin/ into $1 (Python's lzma: no xz tool needed).
unpack() {
    local dest=$1
    mkdir -p "$dest/tests"
    python3 - "$BIN" "$dest" <<'EOF'
import glob, lzma, os, sys
src, dest = sys.argv[1], sys.argv[2]
for f in [os.path.join(src, "bench-gpu.xz")] + sorted(glob.glob(os.path.join(src, "tests", "*.xz"))):
    if not os.path.isfile(f):
        continue
    out = os.path.join(dest, os.path.relpath(f, src)[: -len(".xz")])
    with open(f, "rb") as i, open(out, "wb") as o:
        o.write(lzma.decompress(i.read()))
    os.chmod(out, 0o755)
EOF
}

# Picks the CUDA 13 libraries devtype loads (libnvrtc, libcublas, libcublasLt) from one folder
# when one holds them all (PyTorch's nvidia wheels, torch/lib, a toolkit), and links them,
# unversioned and versioned, into the folder $1. Prints the folders to put on LD_LIBRARY_PATH
# after $1, then a line per library: `name -> file`.
pick_cuda_libs() {
    python3 - "$1" <<'EOF'
import glob, os, site, sys
links = sys.argv[1]
os.makedirs(links, exist_ok=True)
roots = []
for p in sys.path + site.getsitepackages() + [site.getusersitepackages()]:
    if p and os.path.isdir(p) and p not in roots:
        roots.append(p)
dirs = []
for root in roots:
    for pattern in ("nvidia/cu13/lib", "nvidia/*/lib", "torch/lib"):
        dirs += sorted(glob.glob(os.path.join(root, pattern)))
dirs += sorted(glob.glob("/usr/local/cuda*/lib64")) + ["/usr/lib/x86_64-linux-gnu", "/usr/lib64"]
dirs = [d for i, d in enumerate(dirs) if os.path.isdir(d) and d not in dirs[:i]]
# CUDA 13 (what devtype is built for); CUDA 12 libraries only when no 13 is installed at all.
# (13 again last: with nothing found, the report names what was looked for.)
for major in (13, 12, 13):
    wanted = [f"libnvrtc.so.{major}", f"libcublas.so.{major}", f"libcublasLt.so.{major}"]
    have = {d: [w for w in wanted if os.path.exists(os.path.join(d, w))] for d in dirs}
    if any(have.values()):
        break
whole = [d for d in dirs if len(have[d]) == len(wanted)]
chosen = {}
if whole:
    for w in wanted:
        chosen[w] = whole[0]
else:
    # No folder holds all three: each from the first folder that has it (all CUDA 13 still).
    for w in wanted:
        for d in dirs:
            if w in have[d]:
                chosen[w] = d
                break
folders = []
for w, d in chosen.items():
    real = os.path.realpath(os.path.join(d, w))
    stem = w[: w.index(".so")]
    for name in (stem + ".so", w):
        dst = os.path.join(links, name)
        if os.path.lexists(dst):
            os.remove(dst)
        os.symlink(real, dst)
    if w.startswith("libnvrtc"):
        # libnvrtc opens its builtins by name: link them from the same folder.
        for b in glob.glob(os.path.join(d, f"libnvrtc-builtins.so.{major}*")):
            dst = os.path.join(links, os.path.basename(b))
            if not os.path.lexists(dst):
                os.symlink(os.path.realpath(b), dst)
    if d not in folders:
        folders.append(d)
print(":".join(folders))
for w in wanted:
    print(f"  {w:<20} -> {os.path.realpath(os.path.join(chosen[w], w)) if w in chosen else 'NOT FOUND'}")
if not whole and chosen:
    print("  warning: no single folder holds all three; they come from different folders")
EOF
}

# The files the dynamic loader picks for each library under the current LD_LIBRARY_PATH, in
# cudarc's order of names (unversioned first), read back from /proc/self/maps.
loaded_libs() {
    python3 - <<'EOF'
import ctypes, os
names = {
    "libcuda": ["libcuda.so", "libcuda.so.13", "libcuda.so.1"],
    "libnvrtc": ["libnvrtc.so", "libnvrtc.so.13"],
    "libcublas": ["libcublas.so", "libcublas.so.13"],
}
opened = {}
for lib, candidates in names.items():
    for n in candidates:
        try:
            ctypes.CDLL(n)
            opened[lib] = n
            break
        except OSError:
            pass
maps = {}
for line in open("/proc/self/maps"):
    path = line.split()[-1] if "/" in line else ""
    base = os.path.basename(path)
    for lib in ("libcuda", "libnvrtc", "libnvrtc-builtins", "libcublas", "libcublasLt"):
        if base.startswith(lib + ".so"):
            maps.setdefault(lib, path)
for lib in ("libcuda", "libnvrtc", "libcublas", "libcublasLt"):
    how = f"(as {opened[lib]})" if lib in opened else ""
    print(f"  {lib:<12} {maps.get(lib, 'not loadable')} {how}")
EOF
}

# The interesting part of a failed test binary's log: from the `failures:` section, each failed
# test with its panic location and message (Rust 1.95 prints the message on the lines after
# `panicked at`), a message repeated by later tests given once; without that section (a crash,
# a time-out) the lines around each panic, else the log's tail.
failure_details() {
    local log=$1
    if grep -q '^failures:$' "$log" && python3 - "$log" <<'EOF' 2>/dev/null; then
import re, sys
lines = open(sys.argv[1], errors="replace").read().splitlines()
i = lines.index("failures:") + 1
seen = {}
name = None
shown = 0
while i < len(lines) and lines[i] != "failures:" and not lines[i].startswith("test result:"):
    m = re.match(r"^---- (\S+) stdout ----$", lines[i])
    if m:
        name = m.group(1)
    elif "panicked at" in lines[i] and name:
        where = lines[i].split("panicked at", 1)[1].strip().rstrip(":")
        msg = []
        j = i + 1
        while (j < len(lines) and lines[j].strip() and len(msg) < 6
               and not lines[j].startswith(("note:", "stack backtrace", "---- "))):
            msg.append(lines[j])
            j += 1
        text = "\n".join(msg)
        if text in seen:
            print(f"  {name} ({where}): the same message as {seen[text]}")
        else:
            seen[text] = name
            print(f"  {name} ({where}):")
            for line in msg:
                print(f"      {line}")
        shown += 1
        name = None
        i = j
        continue
    i += 1
sys.exit(0 if shown else 1)
EOF
        return
    fi
    if grep -q 'panicked at' "$log"; then
        grep -A3 'panicked at' "$log" | head -n 40
    else
        tail -n 15 "$log"
    fi
}

run() {
    [ -f "$BIN/bench-gpu.xz" ] || die "no binaries in $BIN: run 'bash scripts/gpu-check.sh build' first"
    local start=$SECONDS
    local budget=${GPU_CHECK_BUDGET_S:-440}
    local cap=${GPU_CHECK_CAP_S:-120}
    local out=${OUT:-$BIN/results}
    mkdir -p "$out"
    out=$(cd "$out" && pwd)
    rm -f "$out/summary.txt" "$out/table.txt" "$out/logs.tgz"
    local scratch
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/devtype-gpu-check.XXXXXX")
    local exes="$scratch/bin" logs="$scratch/logs"
    mkdir -p "$logs"
    unpack "$exes"
    local summary="$logs/summary.txt"
    : >"$summary"
    say() { printf '%s\n' "$*" | tee -a "$summary"; }

    # Kernels: the shipped CUBINs, in a writable copy shared by every process of this run.
    export DEVTYPE_KERNEL_CACHE="$scratch/kernel-cache"
    mkdir -p "$DEVTYPE_KERNEL_CACHE"
    cp "$BIN"/kernels/* "$DEVTYPE_KERNEL_CACHE"/ 2>/dev/null || true
    # They ship gzipped (`build`): unpacked here, where the loader looks for them.
    gunzip -f "$DEVTYPE_KERNEL_CACHE"/*.cubin.gz 2>/dev/null || true
    local cubins
    cubins=$(find "$DEVTYPE_KERNEL_CACHE" -name '*.cubin' | wc -l)
    touch "$scratch/kernel-stamp"

    # One folder of libraries, linked first on the path.
    local picked folders
    picked=$(pick_cuda_libs "$scratch/cuda-libs" 2>"$logs/pick-libs.log")
    folders=$(echo "$picked" | head -n 1)
    export LD_LIBRARY_PATH="$scratch/cuda-libs${folders:+:$folders}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export DEVTYPE_REQUIRE_CUDA=1 DEVTYPE_REQUIRE_NVRTC=1 RUST_BACKTRACE=0
    # cuda_runtime writes the CUDA files its process really loaded here (see the summary).
    export DEVTYPE_LOADED_LIBS_FILE="$logs/loaded-libs.txt"

    say "==== devtype GPU check, $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n)"
    if command -v nvidia-smi >/dev/null; then
        say "GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 2)"
    else
        say "GPU: no nvidia-smi on this machine (a dry run: every GPU binary should fail)"
    fi
    say "CUDA libraries picked (linked into $scratch/cuda-libs, first on LD_LIBRARY_PATH):"
    say "$(echo "$picked" | tail -n +2)"
    say "Files a loader finds under that path (python's dlopen, in cudarc's order of names):"
    say "$(loaded_libs 2>&1)"
    say "Kernels: $cubins shipped CUBINs in DEVTYPE_KERNEL_CACHE (NVRTC compiles what does not match)"
    say "Budget: ${budget}s in all, at most ${cap}s per binary"
    say ""
    say "==== tests"

    # Most informative first: the runtime and every op against the CPU, then the rest. The
    # benchmark and PyTorch keep a reserve of the budget at the end.
    local reserve=$((cap + 90))
    local order=(cuda_runtime cuda_ops cuda_half cuda_autograd cuda_sync cuda_oom nn_modules lib-unit-tests)
    local t n
    for t in "$exes"/tests/*; do
        n=$(basename "$t")
        [[ " ${order[*]} " == *" $n "* ]] || order+=("$n")
    done
    local failed=0 failures=""
    for n in "${order[@]}"; do
        local exe="$exes/tests/$n"
        [ -x "$exe" ] || continue
        local left=$((budget - reserve - (SECONDS - start)))
        if [ "$left" -lt 15 ]; then
            say "$(printf '%-18s SKIPPED (time budget)' "$n")"
            failed=1
            continue
        fi
        local limit=$((left < cap ? left : cap))
        local t0=$SECONDS
        timeout -k 5 "$limit" "$exe" --test-threads=8 >"$logs/$n.log" 2>&1
        local rc=$?
        local line
        line=$(grep -E '^test result:' "$logs/$n.log" | tail -n 1)
        line=${line#test result: }
        if [ $rc -eq 0 ]; then
            say "$(printf '%-18s ok   %4ss  %s' "$n" $((SECONDS - t0)) "$line")"
        else
            failed=1
            local why="rc=$rc"
            [ $rc -eq 124 ] || [ $rc -eq 137 ] && why="TIMED OUT after ${limit}s"
            say "$(printf '%-18s FAIL %4ss  %s %s' "$n" $((SECONDS - t0)) "$why" "$line")"
            failures+="---- $n ($why)"$'\n'"$(failure_details "$logs/$n.log")"$'\n'
        fi
    done
    if [ -n "$failures" ]; then
        say ""
        say "==== failures (assertion messages; full logs in logs.tgz)"
        say "$failures"
    fi

    local fresh
    fresh=$(find "$DEVTYPE_KERNEL_CACHE" -type f -newer "$scratch/kernel-stamp" | wc -l)
    say ""
    say "CUDA files the cuda_runtime process loaded (from its /proc/self/maps):"
    if [ -s "$logs/loaded-libs.txt" ]; then
        say "$(cat "$logs/loaded-libs.txt")"
    else
        say "  (not written: cuda_runtime did not get that far)"
    fi
    say "Kernel files NVRTC compiled during the run: $fresh (0: every shipped CUBIN matched)"

    # One GPU test binary under compute-sanitizer's memcheck (out-of-bounds and misaligned
    # accesses in every kernel it launches), when the machine has the tool and the time:
    # GPU_CHECK_SANITIZE names the binary (cuda_runtime), GPU_CHECK_SANITIZE_ARGS replaces its
    # arguments (--test-threads=4; a test name filters, as with cargo test).
    local sane=${GPU_CHECK_SANITIZE:-cuda_runtime}
    say ""
    say "==== compute-sanitizer --tool memcheck: $sane"
    left=$((budget - reserve - (SECONDS - start)))
    if ! command -v compute-sanitizer >/dev/null; then
        say "not run: no compute-sanitizer on this machine"
    elif [ ! -x "$exes/tests/$sane" ]; then
        say "not run: no test binary $sane"
    elif [ "$left" -lt 20 ]; then
        say "not run: the time budget is spent"
    else
        local slimit=$((left < 90 ? left : 90))
        local t0=$SECONDS
        timeout -k 5 "$slimit" compute-sanitizer --tool memcheck --error-exitcode 99 \
            "$exes/tests/$sane" ${GPU_CHECK_SANITIZE_ARGS:---test-threads=4} >"$logs/sanitizer-$sane.log" 2>&1
        local rc=$?
        local line
        line=$(grep -E '^test result:' "$logs/sanitizer-$sane.log" | tail -n 1)
        say "rc=$rc in $((SECONDS - t0))s (limit ${slimit}s; 99: memcheck reported errors) ${line#test result: }"
        say "$(grep -E 'ERROR SUMMARY|^========= (Invalid|Program hit|Error|Device|Address)' "$logs/sanitizer-$sane.log" | head -n 20)"
        if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
            say "(stopped at its limit: the tests it finished ran clean unless errors are listed)"
        elif [ $rc -ne 0 ]; then
            failed=1
            say "$(tail -n 8 "$logs/sanitizer-$sane.log")"
        fi
    fi
    say ""
    say "==== GPU benchmark"
    local left=$((budget - 90 - (SECONDS - start)))
    local limit=$((left < cap ? left : cap))
    [ "$limit" -lt 20 ] && limit=20
    timeout -k 5 "$limit" "$exes/bench-gpu" --json "$logs/devtype.json" --texts "$logs/devtype-texts.tsv" >"$logs/bench-gpu.log" 2>&1
    local rc=$?
    say "$(cat "$logs/bench-gpu.log")"
    if [ $rc -ne 0 ]; then
        failed=1
        [ $rc -eq 124 ] || [ $rc -eq 137 ] && say "bench-gpu: TIMED OUT after ${limit}s (the JSON keeps what it measured)" ||
            say "bench-gpu: FAIL rc=$rc"
    fi

    say ""
    say "==== PyTorch on the same workloads"
    left=$((budget - (SECONDS - start)))
    limit=$((left > 30 ? left : 30))
    limit=$((limit < 90 ? limit : 90))
    timeout -k 5 "$limit" python3 scripts/gpu_torch_bench.py --devtype "$logs/devtype.json" \
        --devtype-texts "$logs/devtype-texts.tsv" --table "$logs/table.txt" >"$logs/torch.log" 2>&1
    rc=$?
    if [ -s "$logs/table.txt" ]; then
        cp "$logs/table.txt" "$out/table.txt"
    else
        {
            echo "no table: the PyTorch comparison did not finish (rc=$rc):"
            tail -n 5 "$logs/torch.log"
            echo "devtype's numbers: $(cat "$logs/devtype.json" 2>/dev/null || echo none)"
        } >"$out/table.txt"
    fi
    # CUDA graphs (issue 32): PyTorch's CUDAGraph of the small MLP step beside devtype's replay.
    left=$((budget - (SECONDS - start)))
    limit=$((left > 20 ? left : 20))
    limit=$((limit < 60 ? limit : 60))
    timeout -k 5 "$limit" python3 scripts/gpu_torch_graph_bench.py --devtype "$logs/devtype.json" --table "$logs/table-graph.txt" >"$logs/torch-graph.log" 2>&1
    rc=$?
    {
        echo ""
        if [ -s "$logs/table-graph.txt" ]; then
            cat "$logs/table-graph.txt"
        else
            echo "no CUDA graph table: scripts/gpu_torch_graph_bench.py did not finish (rc=$rc):"
            tail -n 5 "$logs/torch-graph.log"
        fi
    } >>"$out/table.txt"
    say "$(cat "$out/table.txt")"
    say ""
    say "==== done in $((SECONDS - start)) s: $([ $failed -eq 0 ] && echo PASS || echo FAIL)"
    cp "$summary" "$out/summary.txt"
    tar -czf "$out/logs.tgz" -C "$scratch" logs
    rm -rf "$scratch"
    return $failed
}

case "${1:-}" in
build) build ;;
run) run ;;
list) gpu_tests ;;
*)
    echo "usage: bash scripts/gpu-check.sh build|run|list" >&2
    exit 2
    ;;
esac
