# Sourced by tests/tiktoken_check.sh and tests/tiktoken_fuzz.sh: makes a scratch folder
# $scratch (removed at exit) and sets $modules to a node_modules folder holding npm tiktoken,
# the reference encoder (the WASM build of OpenAI's Rust tiktoken; its regex engine's Unicode
# version is util/unicode_tables.h's, 16.0). Pinned: another version may bring another
# Unicode version, and the reference would drift silently. $TIKTOKEN_NODE_MODULES, if set, is
# used as it is; else npm installs it under $scratch. On failure: a FAIL line, then
# "0 passed, 1 failed", and the script exits 1.
TIKTOKEN_VERSION=1.0.22
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
modules=${TIKTOKEN_NODE_MODULES:-}
if [ -z "$modules" ]; then
    if ! npm install --silent --no-audit --no-fund --prefix "$scratch/npm" "tiktoken@$TIKTOKEN_VERSION" \
            > "$scratch/npm.log" 2>&1; then
        echo "FAIL npm could not install tiktoken@$TIKTOKEN_VERSION:"; tail -n 3 "$scratch/npm.log"
        echo "0 passed, 1 failed"
        exit 1
    fi
    modules=$scratch/npm/node_modules
fi
