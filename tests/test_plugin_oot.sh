#!/bin/bash
# test_plugin_oot.sh — a plugin built out of tree: install this build of tessera into a temporary
# prefix, compile tests/plugins/oot_plugin.c there against the installed headers alone (nothing of
# tessera on its link line), compile tests/plugins/oot_host.c against the installed library
# (pkg-config tessera), and run the host, which loads the plugin by path and checks it against
# the CPU (tests/plugins/oot_host.c).
# usage: test_plugin_oot.sh BUILD_DIR SOURCE_DIR CC [extra compiler flags: the sanitizers]
set -euo pipefail
build=$1 src=$2 cc=$3
shift 3
extra=("$@")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }
inc=$tmp/prefix/include
for h in tessera.h tessera_backend.h; do
  [ -f "$inc/$h" ] || { echo "test_plugin_oot: $h was not installed"; exit 1; }
done
# the plugin: the installed headers only, and no tessera library
"$cc" -std=gnu11 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden "${extra[@]}" -I"$inc" \
  "$src/tests/plugins/oot_plugin.c" -o "$tmp/libtessera-oot.so"
if nm -D --undefined-only "$tmp/libtessera-oot.so" | grep -q ' ts_'; then
  echo "test_plugin_oot: the plugin needs tessera symbols:"; nm -D --undefined-only "$tmp/libtessera-oot.so" | grep ' ts_'
  exit 1
fi
# the host: the installed library, found by pkg-config
libdir=$(ls -d "$tmp/prefix"/lib*/pkgconfig | head -1)
export PKG_CONFIG_PATH=$libdir
"$cc" -std=gnu11 -Wall "${extra[@]}" $(pkg-config --cflags tessera) "$src/tests/plugins/oot_host.c" -o "$tmp/oot_host" \
  $(pkg-config --libs tessera) -lm -Wl,-rpath,"$(dirname "$libdir")"
"$tmp/oot_host" "$tmp/libtessera-oot.so"
