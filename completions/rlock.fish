# fish completion for rlock(1). Installed in share/fish/vendor_completions.d.
# Lock names are completed from the server when a URL is known (-u/--url on the
# line, $RLOCK_URL or $REDIS_URL), through `rlock list --names`, which gives up
# after --command-timeout 500ms in all: a dead or stalled server never hangs the shell.

# Options that take their value as the next word.
set -g __rlock_value_opts -u --url --user --password-file --sentinel-user --sentinel-password-file \
    --tls-ca-cert --tls-ca-dir --tls-cert --tls-key --tls-server-name --connect-timeout \
    --command-timeout --prefix --layout -c --command --ttl --wait -w --timeout -E --conflict-exit-code --limit --sync-replicas \
    --min-hold --done-for --on-lost --kill-after --token --while-pid --and --label --priority \
    --max-waiters --history --superseded-exit-code --reason --since --svg --interval --count

# Reads the line before the cursor: sets __rlock_sub (the subcommand), __rlock_key (1 once
# its KEY is given) and __rlock_cmd (where run's command starts, as an index into the
# words before the cursor; one past them when the current word starts it; else empty).
function __rlock_parse
    set -g __rlock_sub ''
    set -g __rlock_key ''
    set -g __rlock_cmd ''
    set -l words (commandline -opc)
    set -l n (count $words)
    set -l i 2
    while test $i -le $n
        set -l w $words[$i]
        if test "$w" = --
            if test "$__rlock_sub" = run
                set __rlock_cmd (math $i + 1)
                return
            end
        else if string match -q -- '-*' $w
            if not string match -q -- '*=*' $w; and contains -- $w $__rlock_value_opts
                set i (math $i + 1)
            else if test "$__rlock_sub" = history; and contains -- $w -n --lines
                # history's count of lines (-n is run's and acquire's --no-wait)
                set i (math $i + 1)
            end
        else if test -z "$__rlock_sub"
            set __rlock_sub $w
        else if test -z "$__rlock_key"
            set __rlock_key 1
        else if test "$__rlock_sub" = run
            set __rlock_cmd $i
            return
        end
        set i (math $i + 1)
    end
    # `rlock run KEY CMD` without "--": the current word after KEY is the command unless
    # it is an option or an option's value.
    if test "$__rlock_sub" = run -a -n "$__rlock_key"
        and not string match -q -- '-*' (commandline -ct)
        and not contains -- "$words[$n]" $__rlock_value_opts
        set __rlock_cmd (math $n + 1)
    end
end

# True when the subcommand is one of the arguments (and run's command has not started).
function __rlock_sub_is
    __rlock_parse
    test -z "$__rlock_cmd"; and contains -- "$__rlock_sub" $argv
end

# True while completing KEY (list: PATTERN).
function __rlock_wants_key
    __rlock_parse
    test -n "$__rlock_sub" -a -z "$__rlock_key" -a -z "$__rlock_cmd"
    and not string match -q -- '-*' (commandline -ct)
    and not contains -- (commandline -opc)[-1] $__rlock_value_opts
    and not begin
        test "$__rlock_sub" = history; and contains -- (commandline -opc)[-1] -n --lines
    end
end

# Lock names that start with the current word, from the server.
function __rlock_key_names
    set -l words (commandline -opc)
    set -l conn
    set -l url
    set -l n (count $words)
    set -l i 2
    while test $i -le $n
        set -l w $words[$i]
        test "$w" = --; and break
        switch $w
            case -u --url --user --password-file --sentinel-user --sentinel-password-file \
                --tls-ca-cert --tls-ca-dir --tls-cert --tls-key --tls-server-name \
                --connect-timeout --prefix --layout
                contains -- $w -u --url; and set url 1
                set i (math $i + 1)
                set -a conn $w $words[$i]
            case '--url=*' '-u?*'
                set url 1
                set -a conn $w
            case '--user=*' '--password-file=*' '--sentinel-user=*' '--sentinel-password-file=*' \
                '--tls-*=*' '--connect-timeout=*' '--prefix=*' '--layout=*' --tls-insecure
                set -a conn $w
        end
        set i (math $i + 1)
    end
    test -n "$url" -o -n "$RLOCK_URL" -o -n "$REDIS_URL"; or return
    set -l bin $words[1]
    command -sq -- $bin; or set bin rlock
    # The value of --and=KEY2 is completed as KEY.
    set -l typed (string replace -r -- '^--and=' '' (commandline -ct))
    set -l pattern (string replace -ra -- '([\\\\*?\[\]])' '\\\\$1' $typed)
    command $bin list --names $conn --command-timeout 500ms "$pattern*" 2>/dev/null </dev/null
end

function __rlock_no_subcommand
    set -l words (commandline -opc)
    set -e words[1]
    set -l skip 0
    for w in $words
        if test $skip -eq 1
            set skip 0
            continue
        end
        if contains -- $w -u --url --user --password-file --sentinel-user --sentinel-password-file --tls-ca-cert --tls-ca-dir --tls-cert --tls-key --tls-server-name --connect-timeout --command-timeout -w --timeout --prefix --layout --history
            set skip 1
        else if not string match -q -- '-*' $w
            return 1
        end
    end
    return 0
end

# Completes run's command (from __rlock_cmd on) as a command line of its own.
function __rlock_run_command
    __rlock_parse
    set -l words (commandline -opc)
    set -l rest
    if test -n "$__rlock_cmd" -a "$__rlock_cmd" -le (count $words)
        set rest $words[$__rlock_cmd..-1]
    end
    set -l line (string join -- ' ' (string escape -- $rest))
    complete -C (string trim -l -- "$line "(commandline -ct))
end

function __rlock_in_run_command
    __rlock_parse
    test -n "$__rlock_cmd"
end

complete -c rlock -f

# Subcommands.
complete -c rlock -n __rlock_no_subcommand -a run -d 'hold KEY while CMD runs, renewing the lease (no CMD: until interrupted)'
complete -c rlock -n __rlock_no_subcommand -a acquire -d 'take KEY for --ttl and print the token'
complete -c rlock -n __rlock_no_subcommand -a extend -d 'renew a lease that --token still holds'
complete -c rlock -n __rlock_no_subcommand -a release -d 'release KEY if --token still holds it'
complete -c rlock -n __rlock_no_subcommand -a status -d 'show holders and waiters; exit 0 held, 1 free'
complete -c rlock -n __rlock_no_subcommand -a list -d 'list held locks whose KEY matches PATTERN'
complete -c rlock -n __rlock_no_subcommand -a history -d 'show what happened to KEY: who held it, how it ended'
complete -c rlock -n __rlock_no_subcommand -a break -d 'delete a stuck lock and wake its waiters'
complete -c rlock -n __rlock_no_subcommand -a forget -d 'remove every trace of a free, unwaited key'
complete -c rlock -n __rlock_no_subcommand -a doctor -d 'check whether the Redis server is safe for locks'
complete -c rlock -n __rlock_no_subcommand -a top -d 'a live view of the locks: what needs attention first'
complete -c rlock -n __rlock_no_subcommand -l version -d 'print the version of rlock and of its lock protocol, then exit'

# Connection and output options: before or after the subcommand.
set -l g 'not __rlock_in_run_command'
complete -c rlock -n $g -s u -l url -x -a 'redis:// rediss:// unix:/// redis-sentinel:// rediss-sentinel://' -d 'Redis URL (several: a quorum lock)'
complete -c rlock -n $g -l user -x -d 'ACL user name'
complete -c rlock -n $g -l password-file -r -F -d 'read the password from FILE'
complete -c rlock -n $g -l sentinel-user -x -d 'ACL user name for the sentinels'
complete -c rlock -n $g -l sentinel-password-file -r -F -d 'read the sentinels password from FILE'
complete -c rlock -n $g -l tls-ca-cert -r -F -d 'CA certificate file'
complete -c rlock -n $g -l tls-ca-dir -x -a '(__fish_complete_directories)' -d 'directory of CA certificates'
complete -c rlock -n $g -l tls-cert -r -F -d 'client certificate file'
complete -c rlock -n $g -l tls-key -r -F -d 'client private key file'
complete -c rlock -n $g -l tls-server-name -x -d 'name for SNI and certificate verification'
complete -c rlock -n $g -l tls-insecure -d 'do not verify the server certificate'
complete -c rlock -n $g -l connect-timeout -x -d 'connect and handshake limit (default 5s)'
complete -c rlock -n $g -l command-timeout -x -d 'limit for one Redis command (default 5s; before 0.5.0: --timeout)'
complete -c rlock -n $g -l prefix -x -d 'prefix of every Redis key (default lock:)'
complete -c rlock -n $g -l layout -x -a 'rlock\t"rlock own keys, the default: a fair line, fences, history" plain\t"SET PREFIXKEY NX PX, as the NestJS service of the seeds" redisson\t"the hash Redisson keeps at KEY"' -d 'whose keys (default $RLOCK_LAYOUT); two layouts for one name are two different locks'
complete -c rlock -n $g -s v -l verbose -d 'log each Redis round trip'
complete -c rlock -n $g -s q -l quiet -d 'no informational messages'
complete -c rlock -n $g -l history -x -d 'events each lock history keeps (default $RLOCK_HISTORY, else 100; 0: none)'
complete -c rlock -n $g -s h -l help -d 'print help and exit'

# --json: where there is something to print as JSON.
complete -c rlock -n '__rlock_no_subcommand; or __rlock_sub_is acquire extend status list history doctor' -l json -d 'machine-readable output'

# KEY, from the server.
complete -c rlock -n __rlock_wants_key -x -a '(__rlock_key_names)'

# run and acquire.
set -l lk "__rlock_sub_is run acquire"
complete -c rlock -n $lk -l ttl -x -d 'lease length (default 30s)'
complete -c rlock -n $lk -l wait -x -d 'wait at most this long (default: forever)'
complete -c rlock -n $lk -s w -l timeout -x -d 'the same as --wait, as in flock (a bare number is seconds)'
complete -c rlock -n $lk -s n -l no-wait -l nonblock -d 'fail at once when taken'
complete -c rlock -n $lk -s E -l conflict-exit-code -x -d 'exit status when not acquired (default 75)'
complete -c rlock -n $lk -l limit -x -d 'counting semaphore: at most N holders, or a named pool NAME1,NAME2,...'
complete -c rlock -n $lk -l and -x -a '(__rlock_key_names)' -d 'also hold KEY2 (repeatable): every key or none'
complete -c rlock -n $lk -l label -x -d 'what this job is, shown to others (default $RLOCK_LABEL, else the CI job URL)'
complete -c rlock -n $lk -l priority -x -d 'place in line: a higher priority is served first (-1000 to 1000)'
complete -c rlock -n $lk -l supersede -d 'deploy only the latest: replace the waiter that asked for it before'
complete -c rlock -n $lk -l superseded-exit-code -x -d 'exit status when a newer --supersede job superseded this one (default 75)'
complete -c rlock -n $lk -l max-waiters -x -d 'not acquired at once when N waiters are in line already'
complete -c rlock -n $lk -s s -l shared -d 'a shared lock (as flock -s): many shared holders, or one exclusive'
complete -c rlock -n $lk -s x -s e -l exclusive -d 'an exclusive lock (as flock -x): the default'
complete -c rlock -n $lk -l sync-replicas -x -d 'count a lease only once N replicas confirm it'

# run only.
set -l rn "__rlock_sub_is run"
complete -c rlock -n $rn -s c -l command -x -d 'run this shell string with /bin/sh -c'
complete -c rlock -n $rn -l min-hold -x -d 'keep the lock at least this long'
complete -c rlock -n $rn -l done-for -x -d 'once per period: after a success, KEY stays taken (done) this long'
complete -c rlock -n $rn -l on-lost -x -a 'term\t"SIGTERM then SIGKILL, the default" kill\t"SIGKILL at once" warn\t"warn and let CMD finish"' -d 'when the lease is lost'
complete -c rlock -n $rn -l kill-after -x -d 'SIGKILL this long after SIGTERM (--on-lost term, --kill-leftovers; default 10s)'
complete -c rlock -n $rn -l kill-leftovers -d 'when CMD exits, end what it left in its group instead of waiting for it'
complete -c rlock -n $rn -s o -l close -d 'as flock -o: release when CMD exits; what it left runs on outside the lock'
complete -c rlock -n $rn -l cancel-in-progress -d 'with --supersede: also stop the command of a holder that asked for --supersede'
complete -c rlock -n __rlock_in_run_command -x -a '(__rlock_run_command)'

# acquire only.
set -l aq "__rlock_sub_is acquire"
complete -c rlock -n $aq -l while-pid -x -a '(__fish_complete_pids)' -d 'hold KEY while process PID lives'
complete -c rlock -n $aq -l on-lost -x -a 'term\t"SIGTERM to PID, the default" kill\t"SIGKILL to PID" warn\t"nothing"' -d 'with --while-pid: when the lease is lost'
complete -c rlock -n $aq -l export -d 'print shell assignments to eval instead of the token'

# extend, release, break.
complete -c rlock -n '__rlock_sub_is extend release' -l token -x -d 'token printed by acquire (default $RLOCK_TOKEN)'
complete -c rlock -n '__rlock_sub_is extend' -l and -x -a '(__rlock_key_names)' -d 'renew KEY2 too (repeatable)'
complete -c rlock -n '__rlock_sub_is release' -l and -x -a '(__rlock_key_names)' -d 'release KEY2 too (repeatable)'
complete -c rlock -n '__rlock_sub_is extend' -l ttl -x -d 'new lease length'
complete -c rlock -n '__rlock_sub_is extend' -l sync-replicas -x -d 'count the renewal only once N replicas confirm it'
complete -c rlock -n '__rlock_sub_is list' -l names -d 'print only the names, one per line'
complete -c rlock -n '__rlock_sub_is list' -l prometheus -d 'print the Prometheus text format for node_exporter'

# history.
complete -c rlock -n '__rlock_sub_is history' -s n -l lines -x -d 'show the newest N events (default 20)'
complete -c rlock -n '__rlock_sub_is history' -s f -l follow -d 'then show each new event as it happens, until interrupted'
complete -c rlock -n '__rlock_sub_is status' -s f -l follow -d 'then a line each time the holder changes, until interrupted'
complete -c rlock -n '__rlock_sub_is history' -l timeline -d 'draw the events as a timeline, one row per holder host'
complete -c rlock -n '__rlock_sub_is history' -l since -x -a '10m 1h 6h 1d 7d' -d 'with --timeline: show only the last DURATION'
complete -c rlock -n '__rlock_sub_is history' -l svg -r -F -d 'with --timeline: also write the picture to FILE as SVG'

# top.
complete -c rlock -n '__rlock_sub_is top' -s b -l batch -d 'plain snapshots, one every --interval, as top -b'
complete -c rlock -n '__rlock_sub_is top' -l interval -x -a '250ms 1s 5s 30s' -d 'time between refreshes (default 1s)'
complete -c rlock -n '__rlock_sub_is top' -l count -x -d 'exit after N snapshots'
complete -c rlock -n '__rlock_sub_is break forget' -s y -l yes -d 'do not ask for confirmation'
complete -c rlock -n '__rlock_sub_is break' -l token -x -d 'evict only the holder with this token'
complete -c rlock -n '__rlock_sub_is break' -l reason -x -d 'why, recorded in the history with who broke it'
