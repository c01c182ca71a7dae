#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The layering of the TensorFlow adapter, read from the binaries: the core exports no TF_ or
# SE_ name and does not need the adapter; the adapter needs nothing of the core; the
# TensorFlow-style test plug-ins need nothing of the core, and every TF_ function they need
# but one (the broken variant's) is the adapter's.
# Usage: check_symbols.sh LIBTENSORPLUG LIBTENSORPLUG_TFCOMPAT PLUGIN_DIR BROKEN_PLUGIN_DIR
set -u
core=$1
adapter=$2
plugins=$3
broken=$4
source "$(dirname "$0")/../cli/support.sh"

core_exports=$(nm -D --defined-only "$core" | awk '{print $3}')
! grep -qE '^(TF|SE|SP)_' <<<"$core_exports"
check "the core exports no TF_, SE_ or SP_ name" $?
! readelf -d "$core" | grep -q tensorplug_tfcompat
check "the core does not need the adapter" $?
! readelf -d "$adapter" | grep -q 'libtensorplug\.so'
check "the adapter does not need the core" $?
adapter_needs=$(nm -D --undefined-only "$adapter" | awk '{print $2}' | sed 's/@.*//')
! grep -q '^tp_' <<<"$adapter_needs"
check "the adapter needs no tp_ symbol" $?

adapter_exports=$(nm -D --defined-only "$adapter" | awk '{print $3}' | sort -u)
for plugin in "$plugins"/*.so "$broken"/*.so; do
    needs=$(nm -D --undefined-only "$plugin" | awk '{print $2}' | sed 's/@.*//' | sort -u)
    shared=$(comm -12 <(sort -u <<<"$core_exports") <(echo "$needs"))
    [ -z "$shared" ]
    check "$(basename "$plugin") needs nothing of the core (needs: $shared)" $?
    missing=$(comm -23 <(grep '^TF_' <<<"$needs") <(echo "$adapter_exports") | tr '\n' ' ')
    case $(basename "$plugin") in
    libtp_tfcompat_unresolved_symbol.so)
        expected="TF_DeleteOpDefinitionBuilder TF_NewOpDefinitionBuilder " ;;
    *) expected="" ;;
    esac
    [ "$missing" = "$expected" ]
    check "$(basename "$plugin"): the adapter has every TF_ function it needs (lacks: $missing)" $?
done
finish
