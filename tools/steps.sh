# Sourced by tools/bootstrap.sh, test.sh, docs.sh, browser_test.sh and sanitize.sh,
# from the checkout's root: one line per step on stderr, saying what the step did and
# how long it took. On a terminal the step is also announced when it starts, so a
# long one is not silent.
#   step_start "what"; ...; step_done "what it did"       (STEP_PREFIX names the script)
#   step "what" COMMAND...                                 (the two around one command)
#   pip_requirements FILE                                  (pip install -r FILE with $PY, if needed)
#   make_venv                                              (create $VENV if missing)
#   need_venv                                              (stop, saying to run bootstrap, if $PY is missing)
# The interpreter: $PYTHON when set (one of the caller's own), else the clone's venv,
# .venv (LIBZIM_C_VENV), which tools/bootstrap.sh makes from the system python3.
VENV=${LIBZIM_C_VENV:-$PWD/.venv}
PY=${PYTHON:-$VENV/bin/python}
VENV_SHOWN=${VENV#"$PWD"/}
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
# make_venv: the clone's venv, from the system python3 (LIBZIM_C_BASE_PYTHON), unless
# PYTHON names an interpreter of the caller's own. A venv whose interpreter is gone
# (the system python3 was upgraded to another minor version) is made again.
make_venv() {
    [ -n "${PYTHON:-}" ] && return 0
    step_start "virtual environment ($VENV_SHOWN)"
    if "$PY" -c 'import pip' 2>/dev/null; then
        step_done "virtual environment: $VENV_SHOWN ($("$PY" -V 2>&1)) exists already"
        return 0
    fi
    local base=${LIBZIM_C_BASE_PYTHON:-python3}
    rm -rf "$VENV"
    "$base" -m venv "$VENV"
    "$PY" -m pip install -q --disable-pip-version-check --upgrade pip
    step_done "virtual environment: made $VENV_SHOWN from $(command -v "$base") ($("$PY" -V 2>&1))"
}
need_venv() {
    if [ ! -x "$PY" ]; then
        echo "$STEP_PREFIX: no $PY: run bash tools/bootstrap.sh first (it makes $VENV_SHOWN)" >&2
        exit 1
    fi
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
