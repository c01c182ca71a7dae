#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The bash completion of tensorplug: commands, each command's options (exactly those its --help
# describes), the device types present for --type and --device, plug-in files for
# plugin-check. Usage: test_completion.sh TENSORPLUG COMPLETION_FILE TEST_PLUGIN_DIR
set -u
tensorplug=$1
completion=$2
plugins=$3
source "$(dirname "$0")/support.sh"
export TP_PLUGIN_PATH=
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT

bash -n "$completion"
check "the completion file is valid bash" $?
source "$completion"
[ "$(complete -p tensorplug 2>/dev/null)" = "complete -F _tensorplug tensorplug" ]
check "sourcing it registers the completion of tensorplug" $?

# What bash offers for the last word of a command line, one per line, in order.
completions() {
    COMP_WORDS=("$tensorplug" "$@")
    COMP_CWORD=$#
    COMP_LINE="${COMP_WORDS[*]}"
    COMP_POINT=${#COMP_LINE}
    COMPREPLY=()
    _tensorplug tensorplug "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
    printf '%s\n' "${COMPREPLY[@]}"
}
expect_completions() { # expect_completions EXPECTED WORD...: EXPECTED, comma-separated, in any order
    local expected=$1 got
    shift
    got=$(completions "$@" | sort | tr '\n' ',' | sed 's/,$//')
    expected=$(tr ',' '\n' <<<"$expected" | sed '/^$/d' | sort | tr '\n' ',' | sed 's/,$//')
    [ "$got" = "$expected" ]
    check "'tensorplug $*' completes to '$expected' (got: '$got')" $?
}

commands=$("$tensorplug" --help | sed -n '/^commands:$/,/^$/s/^  \([a-z-]*\) .*/\1/p')
expect_completions "$(tr '\n' , <<<"$commands")" ""
expect_completions "plugins,plugin-check" pl
expect_completions "--help,--version" --
expect_completions "devices" --help devi
for command in $commands; do
    options=$("$tensorplug" $command --help | grep -o '^  --[a-z-]*' | tr -d ' ' | tr '\n' ,)
    expect_completions "$options--help,--version" $command --
done
expect_completions "--memory" devices --json --m
expect_completions "--type" --version devices --t   # the command is the first word that is no option

# Device types: those present, found by running the command being completed.
export TP_PLUGIN_PATH=$plugins
expect_completions "CPU,XPU,OLDDEV" devices --type ""
expect_completions "XPU" devices --type x
expect_completions "CPU,XPU,OLDDEV" devices --type =       # bash splits "--type=" at the =
expect_completions "OLDDEV" devices --type = ol
expect_completions "CPU,XPU,OLDDEV" plugin-check a.so --device ""
[ "$(completions devices --type "")" = "$(printf 'CPU\nXPU\nOLDDEV')" ]
check "device types come in the order 'devices' lists them" $?
TP_PLUGIN_PATH= expect_completions "CPU" devices --type ""
expect_completions "" plugin-check a.so --seed ""
expect_completions "" plugin-check a.so --timeout 1

# Files: plug-ins and folders for plugin-check, any file for --output.
mkdir "$scratch/sub"
touch "$scratch/a.so" "$scratch/b.txt" "$scratch/with space.so"
cd "$scratch"
expect_completions "a.so,sub,with space.so" plugin-check ""
[ "$(completions plugin-check wi)" = "with space.so" ]
check "a plug-in file with a space is one completion" $?
expect_completions "a.so,b.txt,sub,with space.so" graph --output ""
expect_completions "b.txt" graph --output b

finish
