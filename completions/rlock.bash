# bash completion for rlock(1)                                  -*- shell-script -*-
# Installed as share/bash-completion/completions/rlock. Works with or without
# the bash-completion package (uses _command_offset from it when available).
# Lock names are completed from the server when a URL is known (-u/--url on the
# line, $RLOCK_URL or $REDIS_URL), through `rlock list --names`, which gives up
# after --command-timeout 500ms in all: a dead or stalled server never hangs the shell.

_rlock_subcommands="run acquire extend release status list history break forget doctor top"

# Options every subcommand accepts (before or after the subcommand). --json is
# not among them: run, release, break and forget refuse it.
_rlock_global_opts="-u --url --user --password-file --sentinel-user --sentinel-password-file
  --tls-ca-cert --tls-ca-dir --tls-cert --tls-key --tls-server-name --tls-insecure --connect-timeout --command-timeout --prefix
  --layout -v --verbose -q --quiet --history -h --help"

# The options of subcommand $1 besides the global ones: what `rlock $1 --help` lists.
_rlock_sub_opts() {
    case $1 in
        run) echo "-c --command --ttl --wait -w --timeout -n --no-wait --nonblock -E
                   --conflict-exit-code --limit --and --label --priority --supersede --superseded-exit-code
                   --max-waiters -s --shared -x -e --exclusive --sync-replicas --min-hold
                   --done-for --on-lost --kill-after --kill-leftovers -o --close --cancel-in-progress" ;;
        acquire) echo "--ttl --wait -w --timeout -n --no-wait --nonblock -E --conflict-exit-code
                       --limit --and --label --priority --supersede --superseded-exit-code --max-waiters -s --shared
                       -x -e --exclusive --sync-replicas --while-pid --on-lost --export
                       --json" ;;
        extend) echo "--token --and --ttl --sync-replicas --json" ;;
        release) echo "--token --and" ;;
        status) echo "-f --follow --json" ;;
        list) echo "--names --prometheus --json" ;;
        history) echo "-n --lines -f --follow --json --timeline --since --svg" ;;
        break) echo "-y --yes --token --reason" ;;
        forget) echo "-y --yes" ;;
        doctor) echo "--json" ;;
        top) echo "-b --batch --interval --count" ;;
    esac
}

# True when option $1 takes its value as the next word (after subcommand $2, if
# given: -n is history's count of lines, run's and acquire's --no-wait).
_rlock_takes_value() {
    [[ $2 == history && ( $1 == -n || $1 == --lines ) ]] && return 0
    case $1 in
        -u | --url | --user | --password-file | --sentinel-user | --sentinel-password-file | \
            --tls-ca-cert | --tls-ca-dir | --tls-cert | \
            --tls-key | --tls-server-name | --connect-timeout | --command-timeout | --prefix | \
            --layout | -w | --timeout | \
            -c | --command | --ttl | --wait | -E | --conflict-exit-code | --limit | \
            --sync-replicas | --min-hold | --done-for | --on-lost | --kill-after | --token | \
            --while-pid | --and | --label | --priority | --max-waiters | --history | \
            --superseded-exit-code | --reason | --since | --svg | --interval | --count)
            return 0 ;;
    esac
    return 1
}

# The words of the line up to the cursor as rlock sees them: bash splits COMP_WORDS at
# ':' and '=' too (COMP_WORDBREAKS), so "redis://h:1/0" arrives as five words. Joins the
# pieces that no blank separates. Sets _rlock_words, _rlock_cword and _rlock_at (the
# COMP_WORDS index where each word starts, for _command_offset).
_rlock_join_words() {
    local j pos=0 tok gap
    _rlock_words=() _rlock_at=() _rlock_cword=0
    for ((j = 0; j <= COMP_CWORD; j++)); do
        tok=${COMP_WORDS[j]}
        gap=""
        while [[ $pos -lt ${#COMP_LINE} && ${COMP_LINE:pos:1} == [[:blank:]] ]]; do
            gap=1
            ((pos++))
        done
        if ((j > 0)) && [[ -z $gap && -n $tok ]]; then
            _rlock_words[${#_rlock_words[@]} - 1]+=$tok
        else
            _rlock_words+=("$tok")
            _rlock_at+=("$j")
        fi
        ((pos += ${#tok}))
    done
    _rlock_cword=$((${#_rlock_words[@]} - 1))
}

# The connection options given on the line before word $1 (the command of run),
# as arguments for rlock, in _rlock_conn; true when one of them names a URL.
_rlock_conn_opts() {
    local i w url=""
    _rlock_conn=()
    for ((i = 1; i < $1; i++)); do
        w=${_rlock_words[i]}
        [[ $w == -- ]] && break
        case $w in
            -u | --url | --user | --password-file | --sentinel-user | --sentinel-password-file | \
                --tls-ca-cert | --tls-ca-dir | --tls-cert | --tls-key | --tls-server-name | \
                --connect-timeout | --prefix | --layout)
                [[ $w == -u || $w == --url ]] && url=1
                _rlock_conn+=("$w" "${_rlock_words[i + 1]/#\~/$HOME}")
                ((i++)) ;;
            --url=* | -u?*)
                url=1
                _rlock_conn+=("$w") ;;
            --user=* | --password-file=* | --sentinel-user=* | --sentinel-password-file=* | \
                --tls-*=* | --connect-timeout=* | --prefix=* | --layout=* | --tls-insecure)
                _rlock_conn+=("$w") ;;
        esac
    done
    [[ -n $url || -n ${RLOCK_URL-} || -n ${REDIS_URL-} ]]
}

# Lock names that start with $1, from the server (nothing when no URL is known).
_rlock_key_names() {
    local prefix=$1 pattern bin=${_rlock_words[0]}
    _rlock_conn_opts "$_rlock_cword" || return 0
    [[ $bin == */* ]] && bin=${bin/#\~/$HOME}
    command -v -- "$bin" >/dev/null 2>&1 || bin=rlock
    pattern=${prefix//\\/\\\\}
    pattern=${pattern//\*/\\*}
    pattern=${pattern//\?/\\?}
    pattern=${pattern//\[/\\[}
    pattern=${pattern//]/\\]}
    "$bin" list --names "${_rlock_conn[@]}" --command-timeout 500ms "$pattern*" 2>/dev/null </dev/null
}

_rlock() {
    local cur prev words cword
    _rlock_join_words
    words=("${_rlock_words[@]}")
    cword=$_rlock_cword
    cur=${words[cword]}
    prev=${words[cword - 1]}
    # "--opt=value": the value is completed as the option's.
    if [[ $cur == --*=* ]]; then
        prev=${cur%%=*}
        cur=${cur#*=}
    fi
    COMPREPLY=()

    # Find the subcommand, its KEY, and where run's command starts.
    local i w sub="" key_seen="" cmd_at=""
    for ((i = 1; i < cword; i++)); do
        w=${words[i]}
        if [[ $w == "--" ]]; then
            [[ $sub == run ]] && cmd_at=$((i + 1))
            [[ -n $cmd_at ]] && break
            continue
        fi
        if [[ $w == -* ]]; then
            [[ $w != *=* ]] && _rlock_takes_value "$w" "$sub" && ((i++))
            continue
        fi
        if [[ -z $sub ]]; then
            sub=$w
        elif [[ -z $key_seen ]]; then
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
            _command_offset "${_rlock_at[cmd_at]}"
        elif ((cword == cmd_at)); then
            COMPREPLY=($(compgen -c -- "$cur" | sort -u))
        else
            compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return
    fi

    _rlock_candidates
    # Readline replaces only the text after the last ':' or '=' (COMP_WORDBREAKS).
    local head=${cur%"${cur##*[:=]}"}
    if [[ -n $head ]]; then
        for i in "${!COMPREPLY[@]}"; do COMPREPLY[i]=${COMPREPLY[i]#"$head"}; done
    fi
}

# What _rlock offers for cur (after prev) outside run's command, in COMPREPLY.
_rlock_candidates() {
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
        --layout)
            COMPREPLY=($(compgen -W "rlock plain redisson" -- "$cur"))
            return ;;
        -u | --url)
            compopt -o nospace 2>/dev/null
            COMPREPLY=($(compgen -W "redis:// rediss:// unix:/// redis-sentinel:// rediss-sentinel://" -- "$cur"))
            return ;;
        --ttl | --wait | -w | --timeout | --min-hold | --kill-after | --connect-timeout | \
            --command-timeout | --interval)
            COMPREPLY=($(compgen -W "250ms 5s 30s 5m 30m 1h" -- "$cur"))
            return ;;
        --since)
            COMPREPLY=($(compgen -W "10m 1h 6h 1d 7d" -- "$cur"))
            return ;;
        --svg)
            COMPREPLY=($(compgen -f -- "$cur"))
            return ;;
        --done-for)
            COMPREPLY=($(compgen -W "1h 20h 23h 7d" -- "$cur"))
            return ;;
        --token)
            [[ -n ${RLOCK_TOKEN-} ]] && COMPREPLY=($(compgen -W "$RLOCK_TOKEN" -- "$cur"))
            return ;;
        --and)
            # Another KEY, from the server, as KEY itself.
            local names
            mapfile -t names < <(_rlock_key_names "$cur")
            COMPREPLY=("${names[@]}")
            return ;;
        -c | --command | --user | --sentinel-user | --tls-server-name | --prefix | -E | \
            --conflict-exit-code | --limit | --sync-replicas | --label | --priority | \
            --max-waiters | --history | --superseded-exit-code | --count)
            return ;;
    esac
    # history -n N (-n is a flag of run and acquire).
    [[ $sub == history && ( $prev == -n || $prev == --lines ) ]] && return

    if [[ -z $sub ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "$_rlock_global_opts --json --version" -- "$cur"))
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
        return
    fi
    # KEY (list: PATTERN), from the server.
    [[ -n $key_seen ]] && return
    case $sub in
        run | acquire | extend | release | status | list | history | break | forget | top)
            local names
            mapfile -t names < <(_rlock_key_names "$cur")
            COMPREPLY=("${names[@]}") ;;
    esac
}

complete -F _rlock rlock
