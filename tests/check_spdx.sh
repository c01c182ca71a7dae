#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every source file of the tree states its license in an SPDX line near its top, so that a file
# copied out of the tree still says under which terms. Usage: check_spdx.sh SOURCE_DIR
set -u
cd "$1" || exit 1
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    files=$(git ls-files)
else
    files=$(find . -type f -not -path './build*' -not -path './.git/*' | sed 's|^\./||')
fi
passes=0
failures=0
while IFS= read -r file; do
    case "$file" in
        */corpus/*|*.md|*.expected|*.png|*.dict|*.txt|LICENSE|.gitignore) continue ;;
        packaging/changelog|packaging/copyright|packaging/libtensorplug/triggers) continue ;;
    esac
    [ -f "$file" ] || continue
    if head -n 3 "$file" | grep -q 'SPDX-License-Identifier: Apache-2.0'; then
        passes=$((passes + 1))
    else
        failures=$((failures + 1))
        echo "FAIL: $file has no 'SPDX-License-Identifier: Apache-2.0' line in its first 3 lines"
    fi
done <<<"$files"
echo "$passes passed, $failures failed"
[ $failures -eq 0 ]
