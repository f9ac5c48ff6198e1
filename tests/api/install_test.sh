#!/bin/sh
# Installs into a fresh prefix and uses the result as a stranger would:
#  - every file lands where the Makefile says, the soname is libmasq.so.0;
#  - a host compiled with only `pkg-config --cflags --libs masq` runs a
#    script on a wrapped buffer, and proves no copy was made (it changes the
#    buffer between two evaluations); statically too, with --static;
#  - the shared library exports masq_ symbols only, and all of masq.h's;
#  - masq.h compiles as C99 and as C++ with -pedantic;
#  - DESTDIR stages under another root with the real prefix in masq.pc;
#  - the man page is well-formed roff; uninstall removes what install put.
# Argument: the build directory. Environment: MAKE (default make), CC.
B=$1
MAKE=${MAKE:-make}
CC=${CC:-cc}
pass=0 fail=0
check() { # description, command...
  desc=$1
  shift
  if "$@" >"$tmp/out" 2>&1; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL install: $desc"
    sed 's/^/  /' "$tmp/out" | head -20
  fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

check "make install PREFIX=$prefix" \
  $MAKE -s --no-print-directory B="$B" install PREFIX="$prefix" LDCONFIG=true
for f in bin/masq include/masq.h lib/libmasq.a lib/libmasq.so lib/libmasq.so.0 \
         lib/libmasq.so.0.1.0 lib/pkgconfig/masq.pc share/man/man1/masq.1 \
         share/vim/vimfiles/syntax/masq.vim share/vim/vimfiles/ftdetect/masq.vim \
         share/masq/masq.tmLanguage.json; do
  check "installed $f" test -e "$prefix/$f"
done
check "soname libmasq.so.0" sh -c "readelf -d '$prefix/lib/libmasq.so.0.1.0' | grep -q 'SONAME.*\[libmasq.so.0\]'"
check "installed masq runs" sh -c "[ \"\$('$prefix/bin/masq' -e '1 + 1')\" = 2 ]"

# The host knows only what pkg-config tells it.
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
check "pkg-config finds masq 0.1.0" sh -c '[ "$(pkg-config --modversion masq)" = 0.1.0 ]'
check "host builds with pkg-config --cflags --libs masq" \
  sh -c "$CC -o '$tmp/host' tests/api/pkgconfig_host.c \$(pkg-config --cflags --libs masq)"
check "host links the installed libmasq.so.0" \
  sh -c "LD_LIBRARY_PATH='$prefix/lib' ldd '$tmp/host' | grep -q '$prefix/lib/libmasq.so.0'"
check "host runs a script on its buffer without a copy" \
  sh -c "LD_LIBRARY_PATH='$prefix/lib' '$tmp/host' | grep -qx 'nocopy: 7 passed, 0 failed'"
check "static host builds with pkg-config --static" \
  sh -c "$CC -o '$tmp/host_static' tests/api/pkgconfig_host.c \$(pkg-config --cflags masq) \
         -L'$prefix/lib' -Wl,-Bstatic -lmasq -Wl,-Bdynamic \
         \$(pkg-config --static --libs-only-l masq | sed 's/-lmasq//')"
check "static host runs" sh -c "'$tmp/host_static' | grep -qx 'nocopy: 7 passed, 0 failed'"

# The complete example of docs/EMBEDDING.md, as a reader would build it.
awk '/^## A complete example/{f=1} f&&/^```c$/{c=1;next} c&&/^```$/{exit} c{print}' \
  docs/EMBEDDING.md > "$tmp/attend.c"
awk '/^## A complete example/{f=1} f&&/^```text$/{c=1;next} c&&/^```$/{exit} c{print}' \
  docs/EMBEDDING.md > "$tmp/attend.expected"
check "the example of docs/EMBEDDING.md builds" \
  sh -c "$CC -o '$tmp/attend' '$tmp/attend.c' \$(pkg-config --cflags --libs masq)"
check "the example of docs/EMBEDDING.md prints what the doc says" \
  sh -c "LD_LIBRARY_PATH='$prefix/lib' '$tmp/attend' | diff '$tmp/attend.expected' -"

# Exports: masq_ only, and every function the header declares.
nm -D --defined-only "$B/libmasq.so" | awk '{print $3}' | sort > "$tmp/exported"
check "nm -D lists only masq_ symbols" sh -c "[ -s '$tmp/exported' ] && ! grep -v '^masq_' '$tmp/exported'"
sed -n 's/^MASQ_API .*[ *]\(masq_[a-z_]*\)(.*/\1/p' include/masq.h | sort > "$tmp/declared"
check "every MASQ_API function is exported" sh -c "[ -s '$tmp/declared' ] && comm -23 '$tmp/declared' '$tmp/exported' | (! grep .)"

# The header on its own, strictly.
printf '#include <masq.h>\nint main(void) { masq_state *M = masq_open(0); masq_close(M); return 0; }\n' > "$tmp/c99.c"
check "masq.h is C99 -pedantic clean" $CC -std=c99 -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$prefix/include" "$tmp/c99.c"
if command -v c++ >/dev/null 2>&1; then
  cp "$tmp/c99.c" "$tmp/cxx.cc"
  check "masq.h is C++ -pedantic clean" c++ -std=c++11 -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$prefix/include" "$tmp/cxx.cc"
fi

# A staged install for packagers (which must not run ldconfig).
check "make install DESTDIR" \
  $MAKE -s --no-print-directory B="$B" install PREFIX=/opt/masq DESTDIR="$tmp/stage" LDCONFIG=false
check "DESTDIR stages under the root" test -e "$tmp/stage/opt/masq/lib/libmasq.so.0.1.0"
check "masq.pc names the real prefix" grep -qx 'prefix=/opt/masq' "$tmp/stage/opt/masq/lib/pkgconfig/masq.pc"

if command -v groff >/dev/null 2>&1; then
  check "masq.1 is well-formed" sh -c "groff -man -Tutf8 -ww -z docs/masq.1 2>&1 | (! grep .)"
fi
check "make uninstall" $MAKE -s --no-print-directory B="$B" uninstall PREFIX="$prefix"
check "uninstall removes the files" sh -c "[ -z \"\$(find '$prefix' -type f -o -type l)\" ]"

echo "install ($B): $pass passed, $fail failed"
