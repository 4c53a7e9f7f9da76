#!/usr/bin/env bash
# Mutation testing of the functions that decide what is deleted.
#
#   bash scripts/mutants.sh            # every module below (hours on 2 cores)
#   bash scripts/mutants.sh ledger path   # some modules (by their keys below)
#   bash scripts/mutants.sh --smoke    # a handful of mutants, minutes
#
# Needs cargo-mutants (`cargo install cargo-mutants --locked`) and the test
# Python environment that `scripts/test.sh` creates (`.venv`). Results go to
# `mutants.out/<module>/` (outcomes.json, caught.txt, missed.txt, ...).
# Mutants run in place, so run this in a clean work tree.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -x .venv/bin/python3 ]; then
    export PATH="$PWD/.venv/bin:$PATH"
fi
command -v cargo-mutants >/dev/null || {
    echo "cargo-mutants is not installed: cargo install cargo-mutants --locked" >&2
    exit 1
}

# Every core test target but the component test (it loads the wasm build,
# which mutants do not rebuild) and the ../shared conformance suite.
ALL="--lib --test acceptance --test bundle --test delta_fixtures --test delta_log --test expire --test golden --test iceberg_fixtures --test ledger --test parsers --test safety --test spellings"
ICEBERG="--lib --test acceptance --test golden --test iceberg_fixtures --test parsers --test safety --test spellings"
DELTA="--lib --test delta_fixtures --test delta_log --test golden --test spellings"

# module key | file | test targets | functions whose mutants are tested
# ('|'-separated; `.*`: every function of the file)
MODULES=(
    "reach|src/reach.rs|$ALL|KeepSet::insert|KeepSet::insert_loose|KeepSet::lookup|KeepSet::frozen_lookup|KeepSet::contains_loose|KeepSet::freeze|fingerprint|loose_fingerprint"
    "verdict|src/verdict.rs|$ALL|Classifier::judge|Classifier::settle_owner|Classifier::unreferenced|Classifier::hidden_component|Classifier::key_of|Classifier::loose_key_of|Classifier::delta_log_verdict|Classifier::relative_key|Classifier::inner|Classifier::decision"
    "path|src/path.rs|$ALL|CanonicalUri::parse|remove_dot_segments|TableLocation::relative|TableLocation::loose_relative|loose|spellings|apply_mappings|apply_mappings::strip|collapse_slashes|has_dot_or_empty_segment|unaddressable|percent_decode"
    "context|src/context.rs|$ALL|.*"
    "acceptance|src/acceptance.rs|--lib --test acceptance --test ledger|.*"
    "recheck|src/plan/{iceberg.rs,refs.rs,session/*.rs}|$ICEBERG|Session::demote|Session::handle_missing|Session::referenced|IcebergSweep::check_summaries|IcebergSweep::judge_stray_documents|Session::check_protections|map_reference|References::reference_mapped|Session::reference_mapped"
    "delta-replay|src/plan/{delta.rs,session/delta.rs}|$DELTA|Session::delta_replay|DeltaSweep::start|DeltaSweep::replay|keep_files|check_retention|DeltaSweep::recent_removals|recent_tombstones|recent_change_data|uniform_metadata|DeltaSweep::start_log_cleanup|DeltaSweep::plan_cleanup|DeltaSweep::landed_commit|Session::delta_next_commit|DeltaSweep::kept_versions|DeltaSweep::head_identity"
    "delta-log|src/delta_log.rs|$DELTA|Replay::apply|Replay::live_files|LogListing::expired_below|LogListing::cleanup_boundary|LogListing::must_stay|LogListing::prove_rebuildable|validate_checkpoint|dv_key|dv_path"
    "expire|src/expire/*.rs|--lib --test expire --test bundle --test golden|plan_expiry|Retention::of|Retention::expire_explicitly|Holds::of|reasons|Defaults::of|more_retentive|History::ancestors|History::keep"
    "ledger|src/{ledger/*.rs,version.rs}|--lib --test ledger --test acceptance|Ledger::approve|Ledger::begin_step|Ledger::reconcile_step|Ledger::observe|Ledger::record|ObjectVersion::matches|ObjectState::can_move_to|Ledger::gates|Ledger::parse"
)
SMOKE="ObjectVersion::matches"

run() { # key file tests regex
    local key=$1 file=$2 tests=$3 re=$4
    echo "== $key: $file ($re) [$tests]"
    # A mutant's name ends in its function ("replace F -> T with x", or
    # "replace < with <= in F"): match the function name whole.
    # shellcheck disable=SC2086
    cargo mutants --in-place --no-shuffle -f "$file" \
        --re "(^|[ :])($re)( |\$)" --timeout 300 \
        --output "mutants.out/$key" -- $tests || true
    local o="mutants.out/$key/mutants.out"
    printf '%s: caught %s, missed %s, unviable %s, timeout %s\n' "$key" \
        "$(wc -l <"$o/caught.txt")" "$(wc -l <"$o/missed.txt")" \
        "$(wc -l <"$o/unviable.txt")" "$(wc -l <"$o/timeout.txt")" | tee -a mutants.out/summary.txt
}

mkdir -p mutants.out
want=${1:-all}
if [ "$want" = --smoke ]; then
    run smoke src/version.rs "--lib --test ledger" "$SMOKE"
    exit 0
fi
# One or more module keys (or none: all of them).
[ $# -eq 0 ] && set -- all
for want in "$@"; do
    for m in "${MODULES[@]}"; do
        IFS='|' read -r key file tests funcs <<<"$m"
        if [ "$want" = all ] || [ "$want" = "$key" ]; then
            run "$key" "$file" "$tests" "$funcs"
        fi
    done
done
