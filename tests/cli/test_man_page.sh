#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tensorplug(1): groff reads it without a warning, and it cannot drift from the command: every
# command and option that --help lists, the version, and every environment variable the
# runtime and the shipped plug-ins read are in it. Usage: test_man_page.sh TENSORPLUG MAN_PAGE SOURCE_DIR
set -u
tensorplug=$1
page=$2
source_dir=$3
source "$(dirname "$0")/support.sh"

warnings=$(groff -man -ww -z "$page" 2>&1); rc=$?
[ $rc -eq 0 ] && [ -z "$warnings" ]
check "groff -man -ww reads the page without a warning (rc $rc: $warnings)" $?
! LC_ALL=C grep -qP '[^\x00-\x7f]' "$page"
check "the page is ASCII, as groff reads it everywhere (special characters as \\(..)" $?
# What a reader sees, without bold or underlining.
rendered=$(groff -man -Tascii -P-c -P-b -P-o -P-u -rLL=200n "$page" 2>/dev/null)
# The source with its escaped hyphens as typed, to look for options in one section.
text=$(sed 's/\\-/-/g' "$page")
section() { # section HEADING: the lines of the page's .SS or .SH HEADING, up to the next one
    awk -v heading="$1" '/^\.S[SH] / { inside = ($0 == heading) } inside' <<<"$text"
}

version_line=$("$tensorplug" version)
grep -qx "\.TH TENSORPLUG 1 [0-9-]* \"${version_line%% (*}\" \"User Commands\"" "$page"
check "the page's title names the version of the command ($version_line)" $?
grep -qF "$version_line" <<<"$rendered"
check "the page shows the line 'tensorplug version' prints" $?

help=$("$tensorplug" --help)
commands=$(sed -n '/^commands:$/,/^$/s/^  \([a-z-]*\) .*/\1/p' <<<"$help")
[ "$(wc -w <<<"$commands")" -ge 5 ]
check "the tool's --help lists its commands (got: $commands)" $?
for command in $commands; do
    body=$(section ".SS $command")
    [ -n "$body" ]
    check "COMMANDS has a subsection for $command" $?
    grep -q "^\.B tensorplug $command\$" <<<"$body"
    check "the $command subsection starts with its synopsis" $?
    options=$("$tensorplug" $command --help | grep -o '^  --[a-z-]*' | sed 's/^ *//')
    for option in $options; do
        grep -qE -- "(^|[ [])$option( |\$)" <<<"$body"
        check "the $command subsection describes $option" $?
    done
done
for option in $(grep -oE '(^| )--?[a-z-]+' <<<"$(sed -n '/^options/,/^$/p' <<<"$help")"); do
    grep -qE -- "(^|[ [\"])$option( |\$)" <<<"$(section ".SH OPTIONS")"
    check "OPTIONS describes the tool's $option" $?
done

# The environment: what the tool's help names, and what the code reads (the runtime through
# tp_env_*, the CPU device and the plug-ins through secure_getenv or the APU's read_number).
environment=$(section ".SH ENVIRONMENT")
variables=$( (grep -o 'TP_[A-Z_]*' <<<"$help"
             grep -rhoE '(env[a-z_]*|read_number)\(([a-z_]+, *)?"TP_[A-Z0-9_]+"' \
                 "$source_dir/src" "$source_dir/devices" "$source_dir/plugins" |
                 grep -o 'TP_[A-Z0-9_]*') | sort -u)
[ "$(wc -w <<<"$variables")" -ge 10 ]
check "the variables read are found in the sources (got: $(tr '\n' ' ' <<<"$variables"))" $?
for variable in $variables; do
    grep -qE "^\.B[IR]? .*\\b$variable\\b" <<<"$environment"
    check "ENVIRONMENT describes $variable" $?
done
for heading in NAME SYNOPSIS DESCRIPTION COMMANDS OPTIONS ENVIRONMENT "EXIT STATUS" FILES \
               EXAMPLES "SEE ALSO"; do
    grep -qx "$heading" <<<"$rendered"
    check "the page has the section $heading" $?
done
grep -q "tensorplug/plugins" <<<"$(section ".SH FILES")"
check "FILES names the plug-in folder" $?

finish
