# Sourced by tools/bootstrap.sh, test.sh, docs.sh and browser_test.sh: one line per
# step on stderr, saying what the step did and how long it took. On a terminal the
# step is also announced when it starts, so a long one is not silent.
#   step_start "what"; ...; step_done "what it did"       (STEP_PREFIX names the script)
#   step "what" COMMAND...                                 (the two around one command)
#   pip_requirements FILE                                  (pip install -r FILE with $PY, if needed)
now_us() { local t=${EPOCHREALTIME//[!0-9]/}; echo "${t:-${SECONDS}000000}"; }
step_start() { step_t0=$(now_us); if [ -t 2 ]; then printf '%s: %s ...\n' "$STEP_PREFIX" "$1" >&2; fi; }
step_done() {
    local ds=$(( ($(now_us) - step_t0) / 100000 ))
    printf '%s: %s (%d.%d s)\n' "$STEP_PREFIX" "$1" $((ds / 10)) $((ds % 10)) >&2
}
step() {
    local what=$1; shift
    step_start "$what"
    local rc=0
    "$@" || rc=$?
    if [ $rc -ne 0 ]; then step_done "$what: FAILED, exit status $rc"; return $rc; fi
    step_done "$what"
}
# pip_requirements FILE: pip installs FILE with $PY unless every requirement is met
# already (pip takes seconds to find that nothing is to do; the metadata check a
# tenth of one).
pip_requirements() {
    step_start "pip requirements ($1)"
    if "$PY" tools/requirements_met.py "$1" 2>/dev/null; then
        step_done "pip requirements ($1): all installed already"
    else
        "$PY" -m pip install -q --disable-pip-version-check -r "$1"
        step_done "pip requirements ($1): installed"
    fi
}
