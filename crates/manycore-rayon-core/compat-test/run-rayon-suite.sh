#!/usr/bin/env bash
# Runs the `rayon` crate's own test suite (its unit tests in src/ and its
# tests/ directory) with rayon-core patched to manycore's, and prints the
# pass/fail counts. rayon's source is the crates.io package of the version
# this project's Cargo.lock resolves, copied out of cargo's registry cache
# into a scratch directory (nothing of it is kept in the repository).
#
#   bash crates/manycore-rayon-core/compat-test/run-rayon-suite.sh [cargo test args...]
#
# Each test binary runs under `timeout` (TEST_TIMEOUT seconds, 300 by
# default); a binary that gives no result (a hang, an abort) is run again
# one test at a time (each under PER_TEST_TIMEOUT seconds, 60 by default),
# and a test that times out there counts as failed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
core="$(cd "$here/.." && pwd)"
scratch="${SCRATCH:-$here/target/rayon-suite}"
timeout_s="${TEST_TIMEOUT:-300}"
per_test_s="${PER_TEST_TIMEOUT:-60}"

# Make sure the rayon package is downloaded and unpacked.
(cd "$here" && cargo fetch --quiet)
version="$(cd "$here" && cargo pkgid rayon | sed 's/.*[@#]//')"
src="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"rayon-$version" | head -1)"
[ -d "$src" ] || { echo "rayon $version not found in cargo's registry" >&2; exit 1; }

rm -rf "$scratch"
mkdir -p "$scratch"
cp -r "$src" "$scratch/rayon"
cd "$scratch/rayon"
rm -f Cargo.lock
cat >> Cargo.toml <<TOML

[patch.crates-io]
rayon-core = { path = "$core" }

[workspace]
TOML

export CARGO_TARGET_DIR="$scratch/target"
cargo test --no-run --quiet "$@" 2>&1 | tail -5
# Run every test binary on its own, so that one hang or abort does not hide
# the others' counts.
passed=0; failed=0; ignored=0
while IFS= read -r bin; do
  name="$(basename "$bin")"
  out="$(timeout "$timeout_s" "$bin" 2>&1)" && rc=0 || rc=$?
  line="$(printf '%s\n' "$out" | grep -E '^test result:' | tail -1 || true)"
  if [ -n "$line" ]; then
    p=$(sed -E 's/.* ([0-9]+) passed.*/\1/' <<<"$line")
    f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
    i=$(sed -E 's/.* ([0-9]+) ignored.*/\1/' <<<"$line")
    passed=$((passed + p)); failed=$((failed + f)); ignored=$((ignored + i))
    printf '%-40s %s\n' "$name" "$line"
    if [ "$f" != 0 ]; then
      printf '%s\n' "$out" | grep -E '^test .* FAILED$' | sed 's/^/    /' || true
    fi
  else
    printf '%-40s no result (exit %s); one test at a time:\n' "$name" "$rc"
    while IFS= read -r t; do
      one="$(timeout "$per_test_s" "$bin" --exact "$t" 2>&1)" && trc=0 || trc=$?
      if printf '%s\n' "$one" | grep -qE '^test result: ok\. 1 passed'; then
        passed=$((passed + 1))
      elif printf '%s\n' "$one" | grep -qE '^test result: ok\. 0 passed; 0 failed; 1 ignored'; then
        ignored=$((ignored + 1))
      else
        failed=$((failed + 1))
        [ "$trc" = 124 ] && why="timed out after ${per_test_s}s" || why="exit $trc"
        printf '    %s FAILED (%s)\n' "$t" "$why"
      fi
    done < <("$bin" --list 2>/dev/null | sed -n 's/: test$//p')
  fi
done < <(cargo test --no-run --message-format=json "$@" 2>/dev/null \
           | grep -o '"executable":"[^"]*"' | sed 's/"executable":"//; s/"$//' | sort -u)
echo "rayon $version suite on manycore's rayon-core:"
echo "$passed passed, $failed failed, $ignored ignored"
