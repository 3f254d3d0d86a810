#!/usr/bin/env zsh
# zsh_complete.zsh COMPDIR 'LINE': the candidates zsh offers, one per line, sorted, when
# TAB is pressed at the end of LINE in an interactive zsh (driven through zpty) whose
# fpath starts with COMPDIR. Every candidate any completion function adds (compadd) is
# recorded, so the list is what the completion system offers, menus and descriptions
# aside. Prints nothing when no completion happens within 5s.
zmodload zsh/zpty
dir=$1 line=$2
tmp=$(mktemp -d)
out=$tmp/out
cat > $tmp/.zshrc <<RC
PROMPT=''
RPROMPT=''
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
RC
zpty z "ZDOTDIR=$tmp zsh -i"
zpty -w -n z "${line}"$'\t'
for i in {1..100}; do
  [[ -s $out ]] && break
  sleep 0.05
done
sleep 0.2 # late compadd calls of the same completion
zpty -d z
sort -u $out
rm -rf $tmp
