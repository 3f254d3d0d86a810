# bash completion for rlock(1)                                  -*- shell-script -*-
# Installed as share/bash-completion/completions/rlock. Works with or without
# the bash-completion package (uses _command_offset from it when available).
# Lock names are not completed: that would need a round trip to Redis.

_rlock_subcommands="run acquire extend release status list break forget"

# Options accepted everywhere (before or after the subcommand).
_rlock_global_opts="-u --url --user --password-file --sentinel-user --sentinel-password-file
  --tls-ca-cert --tls-ca-dir --tls-cert --tls-key --tls-server-name --tls-insecure --connect-timeout --timeout --prefix
  -v --verbose -q --quiet --json -h --help"

_rlock_sub_opts() {
    case $1 in
        run) echo "-c --command --ttl --wait -n --no-wait -E --conflict-exit-code --limit
                   --sync-replicas --min-hold --on-lost --kill-after --kill-leftovers" ;;
        acquire) echo "--ttl --wait -n --no-wait -E --conflict-exit-code --limit --sync-replicas" ;;
        extend) echo "--token --ttl --sync-replicas" ;;
        release) echo "--token" ;;
        break | forget) echo "-y --yes" ;;
    esac
}

# True when option $1 takes its value as the next word.
_rlock_takes_value() {
    case $1 in
        -u | --url | --user | --password-file | --sentinel-user | --sentinel-password-file | \
            --tls-ca-cert | --tls-ca-dir | --tls-cert | \
            --tls-key | --tls-server-name | --connect-timeout | --timeout | --prefix | \
            -c | --command | --ttl | --wait | -E | --conflict-exit-code | --limit | \
            --sync-replicas | --min-hold | --on-lost | --kill-after | --token)
            return 0 ;;
    esac
    return 1
}

_rlock() {
    local cur prev words cword
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
    cur=${words[cword]}
    prev=${words[cword - 1]}
    # "--opt=value": readline splits at '=' (COMP_WORDBREAKS).
    if [[ $cur == "=" ]]; then
        cur=""
    elif [[ $prev == "=" && $cword -ge 2 ]]; then
        prev=${words[cword - 2]}
    fi
    COMPREPLY=()

    # Find the subcommand, run's KEY, and where run's command starts.
    local i w sub="" key_seen="" cmd_at=""
    for ((i = 1; i < cword; i++)); do
        w=${words[i]}
        if [[ $w == "--" ]]; then
            [[ $sub == run ]] && cmd_at=$((i + 1))
            [[ -n $cmd_at ]] && break
            continue
        fi
        if [[ $w == -* ]]; then
            [[ $w != *=* ]] && _rlock_takes_value "$w" && [[ ${words[i + 1]} != "=" ]] && ((i++))
            continue
        fi
        [[ $w == "=" ]] && { ((i++)); continue; }
        if [[ -z $sub ]]; then
            sub=$w
        elif [[ $sub == run && -z $key_seen ]]; then
            key_seen=1
        elif [[ $sub == run ]]; then
            cmd_at=$i # rlock run KEY CMD... without "--"
            break
        fi
    done

    # `rlock run KEY CMD` without "--": a word after KEY that is not an option
    # is the command.
    # (Not when the word is the value of an option: `run KEY --on-lost <TAB>`.)
    if [[ $sub == run && -n $key_seen && -z $cmd_at && $cur != -* ]] &&
        ! _rlock_takes_value "$prev"; then
        cmd_at=$cword
    fi

    # The command of `rlock run KEY -- CMD ARGS`: complete it as a command line.
    if [[ -n $cmd_at && $cword -ge $cmd_at ]]; then
        if declare -F _command_offset >/dev/null; then
            _command_offset "$cmd_at"
        elif ((cword == cmd_at)); then
            COMPREPLY=($(compgen -c -- "$cur" | sort -u))
        else
            compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return
    fi

    # Values of options.
    case $prev in
        --password-file | --sentinel-password-file | --tls-ca-cert | --tls-cert | --tls-key)
            compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -f -- "$cur"))
            return ;;
        --tls-ca-dir)
            compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -d -- "$cur"))
            return ;;
        --on-lost)
            COMPREPLY=($(compgen -W "term kill warn" -- "$cur"))
            return ;;
        -u | --url)
            compopt -o nospace 2>/dev/null
            COMPREPLY=($(compgen -W "redis:// rediss:// unix:/// redis-sentinel:// rediss-sentinel://" -- "$cur"))
            return ;;
        --ttl | --wait | --min-hold | --kill-after | --connect-timeout | --timeout)
            COMPREPLY=($(compgen -W "250ms 5s 30s 5m 30m 1h" -- "$cur"))
            return ;;
        --token)
            [[ -n ${RLOCK_TOKEN-} ]] && COMPREPLY=($(compgen -W "$RLOCK_TOKEN" -- "$cur"))
            return ;;
        -c | --command | --user | --sentinel-user | --tls-server-name | --prefix | -E | \
            --conflict-exit-code | --limit | --sync-replicas)
            return ;;
    esac

    if [[ -z $sub ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "$_rlock_global_opts --version" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$_rlock_subcommands" -- "$cur"))
        fi
        return
    fi
    if [[ $cur == -* ]]; then
        local opts
        opts="$(_rlock_sub_opts "$sub") $_rlock_global_opts"
        [[ $sub == run && -n $key_seen ]] && opts="-- $opts"
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    fi
}

complete -F _rlock rlock
