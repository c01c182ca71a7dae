# SPDX-License-Identifier: Apache-2.0
# bash completion for tensorplug(1): the commands, each command's options, the device types of
# --type and --device, plug-in files for plugin-check and files for --output. Self-contained:
# it needs no helper of the bash-completion package.

# The device types present, in the order `tensorplug devices` lists them. Asked of the command
# being completed rather than written down here: plug-ins bring their own types (APU, GPU, a
# vendor's), and the environment (TP_PLUGIN_PATH, TP_VISIBLE_DEVICES) changes which are present.
_tensorplug_device_types() {
    local tool=$1
    timeout 10 "$tool" devices 2>/dev/null |
        sed -n "s/^PhysicalDevice(name='[^']*', device_type='\([^']*\)')\$/\1/p" |
        awk '!seen[$0]++'
}

_tensorplug() {
    local cur=${COMP_WORDS[COMP_CWORD]}
    local prev=
    ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
    # COMP_WORDBREAKS splits "--type=GP" into "--type", "=", "GP".
    if [[ $cur == "=" ]]; then
        cur=
    elif [[ $prev == "=" ]] && ((COMP_CWORD > 1)); then
        prev=${COMP_WORDS[COMP_CWORD - 2]}
    fi

    local command= i
    for ((i = 1; i < COMP_CWORD; i++)); do
        if [[ ${COMP_WORDS[i]} != -* ]]; then
            command=${COMP_WORDS[i]}
            break
        fi
    done

    COMPREPLY=()
    if [[ -z $command ]]; then
        if [[ $cur == -* ]]; then
            mapfile -t COMPREPLY < <(compgen -W "--help --version" -- "$cur")
        else
            mapfile -t COMPREPLY < <(compgen -W "devices plugins graph plugin-check version" -- "$cur")
        fi
        return 0
    fi

    case $prev in
    --type | --device)
        # Type names are case-insensitive, so "gp" completes to GPU.
        local type
        while IFS= read -r type; do
            [[ ${type,,} == "${cur,,}"* ]] && COMPREPLY+=("$type")
        done < <(_tensorplug_device_types "${COMP_WORDS[0]}")
        return 0
        ;;
    --output)
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        return 0
        ;;
    --seed | --timeout)
        return 0
        ;;
    esac

    local options=
    case $command in
    devices) options="--memory --json --type" ;;
    plugins) options="--json" ;;
    graph) options="--text --output" ;;
    plugin-check) options="--device --seed --timeout --json" ;;
    version) options= ;;
    *) return 0 ;;
    esac
    if [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$options --help --version" -- "$cur")
    elif [[ $command == plugin-check ]]; then
        # The plug-in file: *.so files, and folders to find them in.
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -d -- "$cur"; compgen -f -X '!*.so' -- "$cur")
    fi
    return 0
}

complete -F _tensorplug tensorplug
