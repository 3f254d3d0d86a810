# fish completion for rlock(1). Installed in share/fish/vendor_completions.d.
# Lock names are not completed: that would need a round trip to Redis.

function __rlock_no_subcommand
    set -l words (commandline -opc)
    set -e words[1]
    set -l skip 0
    for w in $words
        if test $skip -eq 1
            set skip 0
            continue
        end
        if contains -- $w -u --url --user --password-file --sentinel-user --sentinel-password-file --tls-ca-cert --tls-ca-dir --tls-cert --tls-key --tls-server-name --connect-timeout --timeout --prefix
            set skip 1
        else if not string match -q -- '-*' $w
            return 1
        end
    end
    return 0
end

# True while completing the command of `rlock run KEY -- CMD ARGS`.
function __rlock_in_run_command
    set -l words (commandline -opc)
    contains -- run $words; and contains -- -- $words
end

# Completes `rlock run KEY -- CMD ARGS` as a command line of its own.
function __rlock_run_command
    set -l rest
    set -l after 0
    for w in (commandline -opc)
        if test $after -eq 1
            set -a rest $w
        else if test "$w" = --
            set after 1
        end
    end
    set -l line (string join -- ' ' (string escape -- $rest))
    complete -C (string trim -l -- "$line "(commandline -ct))
end

complete -c rlock -f

# Subcommands.
complete -c rlock -n __rlock_no_subcommand -a run -d 'hold KEY while CMD runs, renewing the lease'
complete -c rlock -n __rlock_no_subcommand -a acquire -d 'take KEY for --ttl and print the token'
complete -c rlock -n __rlock_no_subcommand -a extend -d 'renew a lease that --token still holds'
complete -c rlock -n __rlock_no_subcommand -a release -d 'release KEY if --token still holds it'
complete -c rlock -n __rlock_no_subcommand -a status -d 'show holders and waiters; exit 0 held, 1 free'
complete -c rlock -n __rlock_no_subcommand -a list -d 'list held locks whose KEY matches PATTERN'
complete -c rlock -n __rlock_no_subcommand -a break -d 'delete a stuck lock and wake its waiters'
complete -c rlock -n __rlock_no_subcommand -a forget -d 'remove every trace of a free, unwaited key'
complete -c rlock -n __rlock_no_subcommand -l version -d 'print the version and exit'

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
complete -c rlock -n $g -l timeout -x -d 'limit for one Redis command (default 5s)'
complete -c rlock -n $g -l prefix -x -d 'prefix of every Redis key (default lock:)'
complete -c rlock -n $g -s v -l verbose -d 'log each Redis round trip'
complete -c rlock -n $g -s q -l quiet -d 'no informational messages'
complete -c rlock -n $g -l json -d 'machine-readable output'
complete -c rlock -n $g -s h -l help -d 'print help and exit'

# run and acquire.
set -l lk "__fish_seen_subcommand_from run acquire; and not __rlock_in_run_command"
complete -c rlock -n $lk -l ttl -x -d 'lease length (default 30s)'
complete -c rlock -n $lk -l wait -x -d 'wait at most this long (default: forever)'
complete -c rlock -n $lk -s n -l no-wait -d 'fail at once when taken'
complete -c rlock -n $lk -s E -l conflict-exit-code -x -d 'exit status when not acquired (default 75)'
complete -c rlock -n $lk -l limit -x -d 'counting semaphore: at most N holders'
complete -c rlock -n $lk -l sync-replicas -x -d 'count a lease only once N replicas confirm it'

# run only.
set -l rn "__fish_seen_subcommand_from run; and not __rlock_in_run_command"
complete -c rlock -n $rn -s c -l command -x -d 'run this shell string with /bin/sh -c'
complete -c rlock -n $rn -l min-hold -x -d 'keep the lock at least this long'
complete -c rlock -n $rn -l on-lost -x -a 'term\t"SIGTERM then SIGKILL, the default" kill\t"SIGKILL at once" warn\t"warn and let CMD finish"' -d 'when the lease is lost'
complete -c rlock -n $rn -l kill-after -x -d 'SIGKILL this long after SIGTERM (--on-lost term, --kill-leftovers; default 10s)'
complete -c rlock -n $rn -l kill-leftovers -d 'when CMD exits, end what it left in its group instead of waiting for it'
complete -c rlock -n __rlock_in_run_command -x -a '(__rlock_run_command)'

# extend, release, break.
complete -c rlock -n '__fish_seen_subcommand_from extend release' -l token -x -d 'token printed by acquire (default $RLOCK_TOKEN)'
complete -c rlock -n '__fish_seen_subcommand_from extend' -l ttl -x -d 'new lease length'
complete -c rlock -n '__fish_seen_subcommand_from extend' -l sync-replicas -x -d 'count the renewal only once N replicas confirm it'
complete -c rlock -n '__fish_seen_subcommand_from break forget' -s y -l yes -d 'do not ask for confirmation'
