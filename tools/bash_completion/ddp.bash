# bash completion for ddp's commands: ddprun, the trainers and the data tools.
#
# One script for all of them, installed once per command name
# (share/bash-completion/completions/<name>), because it knows no command's options itself: it reads
# them from the command's own --help when asked, so a new flag completes without editing this file.
# A value completes by the name --help gives it (src/util/cli.h lists them): FILE or PATH a file,
# DIR a folder, {a|b|c} one of the words (an upper-case one among them adds files or folders; a
# word with an argument, powersgd:N, completes to "powersgd:").
# After ddprun's options, the first word is a command and the words after it complete as that
# command's.
#
#   source build/bash-completion/completions/ddprun   # from a build tree; any of the files loads all

# Reads the options of command `$1` from its --help into _ddp_options_of[$1], "FLAG VALUE_NAME" per
# line (FLAG without its dashes, "-r" for a one-letter spelling; VALUE_NAME empty for a switch), once
# per command and shell: a trainer's --help loads
# LibTorch, a second or so. Option rows start at column 2 ("  -h, --help") or 6 ("      --x"),
# descriptions further right, so a wrapped description that begins with "--flag" is not taken.
# Called as a command, never in $(...), so what it reads outlives the call.
_ddp_load_options() {
  local cmd=$1 line table='' re='^(  -[A-Za-z0-9], |      )--([A-Za-z0-9][A-Za-z0-9_-]*)( ([^ ]+))?( {2,}|$)'
  declare -gA _ddp_options_of
  [[ -n ${_ddp_options_of[$cmd]+set} ]] && return
  while IFS= read -r line; do
    [[ $line =~ $re ]] || continue
    table+="${BASH_REMATCH[2]} ${BASH_REMATCH[4]}"$'\n'
    [[ ${BASH_REMATCH[1]} == *-* ]] && table+="${BASH_REMATCH[1]:2:2} ${BASH_REMATCH[4]}"$'\n'
  done < <("$cmd" --help 2> /dev/null)
  _ddp_options_of[$cmd]=$table
}

# Sets _ddp_value to the value name of option `$2` (without dashes) of command `$1`, loaded by
# _ddp_load_options; fails when the option takes no value or does not exist.
_ddp_value_name() {
  local flag name
  _ddp_value=
  while read -r flag name; do
    if [[ $flag == "$2" ]]; then
      _ddp_value=$name
      [[ -n $name ]]
      return
    fi
  done <<< "${_ddp_options_of[$1]}"
  return 1
}

# Fills COMPREPLY with the values that fit value name `$1` and start with `$2`.
_ddp_values() {
  local name=$1 cur=$2 word files='' dirs=''
  local -a words=("$name")
  if [[ $name == \{*\} ]]; then
    IFS='|' read -r -a words <<< "${name:1:${#name}-2}"
  fi
  COMPREPLY=()
  for word in "${words[@]}"; do
    case $word in
      FILE | PATH | *FILE | *PATH) files=1 ;;
      DIR | *DIR) dirs=1 ;;
      *:[[:upper:]]*) [[ ${word%%:*}: == "$cur"* ]] && COMPREPLY+=("${word%%:*}:") ;;
      *[[:lower:]]* | [0-9]*) [[ $word == "$cur"* ]] && COMPREPLY+=("$word") ;;
    esac
  done
  if [[ -n $files || -n $dirs ]]; then
    # Outside a completion (the tests call the function themselves) compopt has nothing to set.
    compopt -o filenames 2> /dev/null
    if [[ -n $files ]]; then
      mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -f -- "$cur")
    else
      mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -d -- "$cur")
    fi
  fi
}

# Completes ddprun's PROGRAM [ARG...] starting at word `$1`: a command name at it, that command's
# completion after it.
_ddp_program() {
  local at=$1
  if ((COMP_CWORD == at)); then
    mapfile -t COMPREPLY < <(compgen -c -- "${COMP_WORDS[COMP_CWORD]}")
    return
  fi
  if declare -F _command_offset > /dev/null; then
    _command_offset "$at"  # bash-completion's: whatever completion the program has
    return
  fi
  COMP_WORDS=("${COMP_WORDS[@]:at}")
  COMP_CWORD=$((COMP_CWORD - at))
  case ${COMP_WORDS[0]##*/} in
    ddprun | train_* | make_cifar10_* | make_ranzcr_*) _ddp_complete ;;
    *) mapfile -t COMPREPLY < <(compgen -f -- "${COMP_WORDS[COMP_CWORD]}") ;;
  esac
}

_ddp_complete() {
  local cmd=${COMP_WORDS[0]} cword=$COMP_CWORD
  local cur=${COMP_WORDS[cword]} flag='' prefix=''
  COMPREPLY=()
  _ddp_load_options "$cmd"
  # ddprun stops reading options at its first other word (or after "--"): that word is the program.
  if [[ ${cmd##*/} == ddprun ]]; then
    local i=1 word
    while ((i <= cword)); do
      word=${COMP_WORDS[i]}
      if [[ $word == -- ]] && ((i < cword)); then
        _ddp_program $((i + 1))
        return
      elif [[ $word == -* ]]; then
        # The value of "--flag VALUE" (not "--flag=VALUE", which readline splits at '=') is skipped.
        if ((i < cword)) && [[ $word != *=* && ${COMP_WORDS[i + 1]} != = ]] &&
          _ddp_value_name "$cmd" "${word#--}"; then
          ((i++))
        fi
      elif [[ $word != = && ${COMP_WORDS[i - 1]} != = ]]; then
        _ddp_program "$i"
        return
      fi
      ((i++))
    done
  fi
  # Which option's value is being typed: "--flag VALUE", "--flag=VALUE" split by readline at '='
  # (words --flag, =, VALUE) or, where '=' does not break words, one word "--flag=VALUE".
  if [[ $cur == = ]]; then
    flag=${COMP_WORDS[cword - 1]} cur=
  elif ((cword >= 2)) && [[ ${COMP_WORDS[cword - 1]} == = ]]; then
    flag=${COMP_WORDS[cword - 2]}
  elif [[ $cur == --*=* ]]; then
    flag=${cur%%=*} prefix=${cur%%=*}= cur=${cur#*=}
  elif ((cword >= 1)) && [[ ${COMP_WORDS[cword - 1]} == -* ]]; then
    flag=${COMP_WORDS[cword - 1]}
    _ddp_value_name "$cmd" "${flag#--}" || flag=
  fi
  if [[ -n $flag ]]; then
    _ddp_value_name "$cmd" "${flag#--}" || return 0
    _ddp_values "$_ddp_value" "$cur"
    if [[ -n $prefix ]]; then
      local k
      for k in "${!COMPREPLY[@]}"; do COMPREPLY[k]=$prefix${COMPREPLY[k]}; done
    fi
    return 0
  fi
  if [[ $cur == -* || -z $cur ]]; then
    local option name
    while read -r option name; do
      [[ -n $option && $option != -* && --$option == "$cur"* ]] && COMPREPLY+=("--$option")
    done <<< "${_ddp_options_of[$cmd]}"
  fi
  return 0
}

complete -F _ddp_complete ddprun train_cifar10 train_ranzcr make_cifar10_from_idx make_cifar10_synthetic \
  make_ranzcr_synthetic
