# bash completion for zt, the zTensor tool. Installed by `cmake --install`
# as share/bash-completion/completions/zt (bash-completion loads it on the
# first `zt <TAB>`); or source it from ~/.bashrc.
#
# Everything is read from the zt being completed, so the completion never
# drifts from the tool: the commands from `zt --help`, a command's options
# and arguments from `zt COMMAND --help` (its Usage line and its Options),
# object names from `zt ls FILE`.
#
#   zt <TAB>                commands
#   zt cat --<TAB>          that command's options
#   zt cat model.zt <TAB>   object names of model.zt (where the Usage line
#                           says NAME), else file names
#   zt convert --digest <TAB>            xxh3 sha256 none
#   zt convert --format-version <TAB>    1.2 2

_zt_help() {
  # The help text of `zt` or `zt COMMAND`, cached for the shell's life.
  local key="_zt_help_cache_${1//-/_}"
  if [[ -z ${!key+set} ]]; then
    printf -v "$key" '%s' "$("${_zt_cmd:-zt}" ${1:+"$1"} --help 2>/dev/null)"
  fi
  printf '%s' "${!key}"
}

_zt() {
  local cur prev words cword
  if declare -F _init_completion >/dev/null; then
    _init_completion -n = || return
  else
    cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    words=("${COMP_WORDS[@]}") cword=$COMP_CWORD
  fi
  local _zt_cmd=${words[0]}

  if ((cword == 1)); then
    local commands
    commands=$(_zt_help "" | sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z0-9-]*\) .*/\1/p')
    COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
    return
  fi

  local command=${words[1]} help
  help=$(_zt_help "$command")
  [[ -n $help ]] || return

  # Option lines: "  -o, --output OUT   ...", "  --digest ALGO   ...", "  --full   ...".
  local options option_lines
  option_lines=$(printf '%s\n' "$help" | sed -n '/^Options:/,$s/^  \(-[^ ].*\)$/\1/p')
  options=$(printf '%s\n' "$option_lines" | grep -o -- '--\?-[A-Za-z][A-Za-z0-9-]*\(\[=[A-Z]*\]\)\?' |
            sed 's/\[=.*//')

  # The value an option takes, named after it on its line (OUT, ALGO, V, N).
  local value
  value=$(printf '%s\n' "$option_lines" |
          sed -n "s/^\(-[A-Za-z], \)\?\(-\{1,2\}[A-Za-z0-9-]*\) \([A-Z][A-Z.]*\)  .*/\2 \3/p" |
          awk -v p="$prev" '$1 == p {print $2}')
  if [[ -z $value && $prev == -? ]]; then  # a short alias: "-o, --output OUT"
    value=$(printf '%s\n' "$option_lines" |
            sed -n "s/^$prev, --[A-Za-z0-9-]* \([A-Z][A-Z.]*\)  .*/\1/p")
  fi
  if [[ -n $value ]]; then
    case $value in
      ALGO) COMPREPLY=($(compgen -W "xxh3 sha256 none" -- "$cur")) ;;
      V) COMPREPLY=($(compgen -W "1.2 2" -- "$cur")) ;;
      OUT* | FILE*) COMPREPLY=($(compgen -f -- "$cur")) ;;
      *) COMPREPLY=() ;;
    esac
    return
  fi

  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$options --help" -- "$cur"))
    return
  fi

  # Which positional argument this is, options and their values left out.
  local i n=0 first_file=
  for ((i = 2; i < cword; i++)); do
    local w=${words[i]}
    if [[ $w == -* ]]; then
      if printf '%s\n' "$option_lines" |
         grep -q -- "^\(-[A-Za-z], \)\?$w [A-Z]\|^$w, --[A-Za-z0-9-]* [A-Z]"; then
        ((i++))  # its value
      fi
      continue
    fi
    [[ -z $first_file ]] && first_file=$w
    ((n++))
  done
  # The Usage line's positional words: "Usage: zt cat FILE NAME [options]".
  local usage
  usage=$(printf '%s\n' "$help" | sed -n '1s/^Usage: zt [a-z-]* //p' |
          tr ' ' '\n' | grep -v '^[[(-]' | grep -v '^|')
  local -a positional=($usage)
  local want=${positional[n]:-${positional[${#positional[@]} - 1]}}
  if [[ $want == NAME* && -n $first_file ]]; then
    local names
    names=$("$_zt_cmd" ls -- "$first_file" 2>/dev/null) || names=
    local IFS=$'\n'
    COMPREPLY=($(compgen -W "$names" -- "$cur"))
    return
  fi
  COMPREPLY=($(compgen -f -- "$cur"))
}

complete -o filenames -F _zt zt
