#!/usr/bin/env bash
# The MPI tests of manycore-mpi: installs Open MPI and libclang when they
# are missing (as root, with apt-get), builds the tests with the `mpi`
# feature, lints them and their docs (clippy and rustdoc, warnings
# denied), and runs them on 1, 2 and 4 ranks, then with the world's timeout
# at each end of `Duration`; then the registry-mismatch pair as one job of
# two programs, and a job whose rank exits without finalizing (it must
# end, failed, within its bound). Every run is bounded in time; any
# failure stops the script with a message and a non-zero status.
set -euo pipefail
cd "$(dirname "$0")/../.."

# Each step's line carries the seconds since the script started.
say() { echo "== manycore-mpi (${SECONDS}s): $*"; }
die() { echo "manycore-mpi run-tests: FAILED: $*" >&2; exit 1; }

# What a clean machine may lack: mpirun, the MPI headers (libopenmpi-dev)
# and libclang (bindgen, which the mpi crate's build runs).
have_mpi() {
    command -v mpirun >/dev/null 2>&1 &&
        dpkg -s libopenmpi-dev >/dev/null 2>&1 &&
        dpkg -s libclang-dev >/dev/null 2>&1
}
if ! have_mpi; then
    [ "$(id -u)" = 0 ] || die "Open MPI or libclang is missing and this is not root: install libopenmpi-dev openmpi-bin libclang-dev"
    command -v apt-get >/dev/null 2>&1 || die "Open MPI is missing and there is no apt-get"
    say "installing libopenmpi-dev openmpi-bin libclang-dev"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || die "apt-get update"
    apt-get install -y -qq --no-install-recommends libopenmpi-dev openmpi-bin libclang-dev >/dev/null ||
        die "apt-get install"
    have_mpi || die "Open MPI still missing after the install"
fi

say "clippy and rustdoc with the feature on, warnings denied"
timeout 900 cargo clippy -q -p manycore-mpi --features mpi --all-targets -- -D warnings ||
    die "clippy"
RUSTDOCFLAGS=-Dwarnings timeout 900 cargo doc -q -p manycore-mpi --features mpi --no-deps ||
    die "cargo doc"

say "unit tests with the feature on"
timeout 900 cargo test -q -p manycore-mpi --features mpi --lib || die "unit tests"

say "building the MPI tests"
build_log=$(mktemp)
trap 'rm -f "$build_log"' EXIT
timeout 900 cargo test -p manycore-mpi --features mpi --no-run >"$build_log" 2>&1 ||
    { cat "$build_log" >&2; die "build"; }
exe() { sed -n "s|.*Executable $1 (\(.*\))|\1|p" "$build_log" | tail -n 1; }
main_test=$(exe tests/mpi.rs)
mismatch_a=$(exe tests/mismatch/a.rs)
mismatch_b=$(exe tests/mismatch/b.rs)
rank_exit=$(exe tests/rank_exit.rs)
[ -x "$main_test" ] && [ -x "$mismatch_a" ] && [ -x "$mismatch_b" ] && [ -x "$rank_exit" ] ||
    { cat "$build_log" >&2; die "test executables not found in cargo's output"; }

MPIRUN=(timeout --kill-after=10 180 mpirun --allow-run-as-root --oversubscribe)
for n in 1 2 4; do
    say "tests/mpi.rs on $n ranks"
    "${MPIRUN[@]}" -n "$n" "$main_test" || die "tests/mpi.rs on $n ranks (status $?)"
done
for t in zero max; do
    say "tests/mpi.rs on 2 ranks, the world's timeout $t"
    "${MPIRUN[@]}" -n 2 "$main_test" --world-timeout=$t ||
        die "tests/mpi.rs --world-timeout=$t (status $?)"
done

say "registry mismatch: programs a and b as one job must refuse to start"
"${MPIRUN[@]}" -n 1 "$mismatch_a" --expect-mismatch : -n 1 "$mismatch_b" --expect-mismatch ||
    die "registry mismatch (status $?)"

# Fatal, not survivable: the launcher must tear the job down. 124 (or 137,
# after --kill-after) would be timeout's: the job hung.
say "a rank exits without finalizing while rank 0 waits on it: the job must end, failed"
exit_log=$(mktemp)
trap 'rm -f "$build_log" "$exit_log"' EXIT
started=$SECONDS
status=0
timeout --kill-after=10 60 mpirun --allow-run-as-root --oversubscribe -n 2 "$rank_exit" \
    >"$exit_log" 2>&1 || status=$?
took=$((SECONDS - started))
if [ "$status" -eq 0 ] || [ "$status" -eq 124 ] || [ "$status" -eq 137 ] ||
    ! grep -q "rank 1: exiting with status 3" "$exit_log" || grep -q FAILED "$exit_log"; then
    cat "$exit_log" >&2
    die "a rank that exits: the job ended with status $status after ${took}s"
fi
echo "the job ended with status $status after ${took}s"

say "all MPI tests passed"
