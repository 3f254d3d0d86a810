#!/usr/bin/env zsh
# zsh_complete.zsh COMPDIR 'LINE' [MS_FILE]: the candidates zsh offers, one per line,
# sorted, when TAB is pressed at the end of LINE in an interactive zsh (driven through
# zpty) whose fpath starts with COMPDIR. Every candidate any completion function adds
# (compadd) is recorded, so the list is what the completion system offers, menus and
# descriptions aside. After the TAB the helper types a command that marks when the shell
# took input again (type-ahead waits until the completion is over); with MS_FILE it
# writes there how many milliseconds that took. Prints nothing when the shell does not
# take input again within 10s.
zmodload zsh/zpty zsh/datetime
typeset -F t0 t1
typeset -i ms
dir=$1 line=$2 ms_file=$3
tmp=$(mktemp -d)
out=$tmp/out
cat > $tmp/.zshrc <<RC
PROMPT=''
RPROMPT=''
LISTMAX=1000000
unsetopt zle_bracketed_paste 2>/dev/null
fpath=($dir \$fpath)
autoload -Uz compinit && compinit -u -d $tmp/zcompdump
compadd () {
  local -a __hits
  builtin compadd -O __hits "\$@"
  (( \$#__hits )) && print -rl -- \$__hits >> $out
  builtin compadd "\$@"
}
zstyle ':completion:*' list-prompt ''
zstyle ':completion:*' select-prompt ''
bindkey '^I' complete-word
# Ready once the line editor reads: typeahead sent before that may be flushed.
__ready() { print -r ok > $tmp/ready }
zle -N zle-line-init __ready
RC
zpty z "ZDOTDIR=$tmp zsh -i"
for i in {1..200}; do
  [[ -s $tmp/ready ]] && break
  sleep 0.05
done
t0=$EPOCHREALTIME
zpty -w -n z "${line}"$'\t'
# ^U (twice: a "do you wish to see all" question takes the first) empties the line.
zpty -w -n z $'\x15\x15'"print -r back > $tmp/back"$'\n'
for i in {1..1000}; do
  [[ -s $tmp/back ]] && break
  sleep 0.01
done
t1=$EPOCHREALTIME
zpty -d z
if [[ -s $tmp/back ]]; then
  ms=$(( (t1 - t0) * 1000 ))
  [[ -n $ms_file ]] && print -r -- $ms > $ms_file
  [[ -f $out ]] && sort -u $out
fi
rm -rf $tmp
