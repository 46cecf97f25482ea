#!/bin/sh
# usage: sanitizer_preload.sh SANITIZERS
# Prints the LD_PRELOAD value with which a program that is not instrumented
# (python3, a rustc or go test binary) can load a libztensor built with
# -fsanitize=SANITIZERS: the sanitizer runtimes must be loaded first.
# Prints nothing for an empty SANITIZERS. $CC names the compiler that built
# the library (default cc).
set -eu
preload=""
for rt in address:asan undefined:ubsan thread:tsan; do
  case ",${1:-}," in
    *",${rt%%:*},"*)
      so=$(${CC:-cc} -print-file-name="lib${rt#*:}.so")
      preload="$preload${preload:+:}$so" ;;
  esac
done
echo "$preload"
