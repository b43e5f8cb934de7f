#!/usr/bin/env bash
# The documentation site: installs requirements-docs.txt (pip, only when something
# is missing), builds docs/ with `mkdocs build --strict` (any warning is an error:
# broken links between pages or to headings, a missing included example, a page
# left out of the navigation), then checks that every public name is in the
# generated API reference with a docstring (tools/docs_check.py).
#   bash tools/docs.sh [SITE_DIR]      default: site/ in the checkout (git-ignored), kept
# It ends by printing where the site is and how to open it.
# The reference is generated from the checkout's libzim (stubs + the built
# extension's docstrings): it is built in place first if it is not.
set -euo pipefail
cd "$(dirname "$0")/.."
STEP_PREFIX=docs.sh
. tools/steps.sh
need_venv
root=$PWD
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" NO_MKDOCS_2_WARNING=1

pip_requirements requirements-docs.txt

checkout_built() { (cd /tmp && "$PY" -c 'import sys, libzim._libzim as m; sys.exit(not m.__file__.startswith(sys.argv[1]))' "$root/libzim/"); }
if ! checkout_built 2>/dev/null; then
    echo "docs.sh: building the extension first (the reference reads its docstrings; about 40 s on 2 cores)" >&2
    step "build the extension in place (setup.py build_ext --inplace)" "$PY" setup.py build_ext --inplace -q
fi

site=$(realpath -m "${1:-$root/site}")
# Not -q: mkdocs counts strict-mode warnings only among the messages it logs.
build() { "$PY" -m mkdocs build --strict --site-dir "$site" 2>&1 | grep -v '^INFO' || true; test "${PIPESTATUS[0]}" -eq 0; }
step "mkdocs build --strict (into $site)" build
step "docs_check: public names in the reference, cited tests" "$PY" tools/docs_check.py "$site"
echo "docs.sh: the site is in $site: open $site/index.html, or serve it with" \
    "python3 -m http.server -d $site 8000 (then http://127.0.0.1:8000/), or live-edit with python3 -m mkdocs serve"
