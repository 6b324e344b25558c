#!/bin/bash
# test_exports.sh — libtessera.so exports exactly what the public headers declare with TS_API:
# every dynamic symbol it defines is declared so in include/*.h, and every such declaration is
# exported; and no function is declared in a public header without TS_API.
# Usage: test_exports.sh <path to libtessera.so> <include directory>
set -euo pipefail
lib=$1 inc=$2
command -v nm >/dev/null || { echo "test_exports: skipped, nm (binutils) is missing"; exit 77; }

# Names the headers declare, one a line: "api NAME" for TS_API declarations, "bare NAME" for a
# function declared without it (an error). Comments, preprocessor lines and C++ guards are dropped,
# then the text is cut into top-level declarations (at ';' outside braces).
declared=$(perl -e '
    local $/;
    for my $f (@ARGV) {
        open my $fh, "<", $f or die "$f: $!";
        my $t = <$fh>;
        $t =~ s{/\*.*?\*/}{ }gs;
        $t =~ s{//[^\n]*}{}g;
        $t =~ s{#ifdef __cplusplus.*?#endif}{}gs;
        $t =~ s{\\\n}{ }g;
        $t =~ s{^\s*#[^\n]*}{}mg;
        my ($depth, $stmt) = (0, "");
        for my $c (split //, $t) {
            $stmt .= $c;
            $depth++ if $c eq "{";
            $depth-- if $c eq "}";
            my $end = ($c eq ";" && $depth == 0) || ($c eq "}" && $depth == 0 && $stmt =~ /^\s*static\b/);
            next unless $end;
            my $s = $stmt; $stmt = "";
            $s =~ s/\s+/ /g; $s =~ s/^ //;
            next if $s =~ /^(typedef|static|enum|struct)\b/;
            if ($s =~ /^TS_API\b/) {
                $s =~ s/__attribute__\s*\(\(.*?\)\)//g;
                if ($s =~ /\b(\w+)\s*\(/) { print "api $1\n"; }
                elsif ($s =~ /\b(\w+)\s*(\[[^\]]*\])?\s*;$/) { print "api $1\n"; }
            } elsif ($s =~ /\b(ts_\w+)\s*\(/) {
                print "bare $1 ($f)\n";
            }
        }
    }' "$inc"/*.h)

fail=0
bare=$(grep '^bare ' <<<"$declared" || true)
if [ -n "$bare" ]; then
    echo "declared in a public header without TS_API:"; sed 's/^bare /  /' <<<"$bare"; fail=1
fi
api=$(grep '^api ' <<<"$declared" | cut -d' ' -f2 | sort -u)
# Defined dynamic symbols, less what the toolchain adds: libgomp's named critical sections
# (.gomp_critical_user_*), the resolvers of target_clones functions (NAME.resolver) and, in a
# sanitizer build, AddressSanitizer's ODR indicators of exported variables (__odr_asan.NAME) and
# the leak checker's suppressions hook that src/comm/comm.c defines (looked up dynamically).
exported=$(nm -D --defined-only "$lib" | awk '{print $NF}' \
    | grep -v -e '^\.gomp_critical_user_' -e '\.resolver$' -e '^__odr_asan\.' -e '^__lsan_default_suppressions$' | sort -u)

extra=$(comm -13 <(echo "$api") <(echo "$exported"))
missing=$(comm -23 <(echo "$api") <(echo "$exported"))
if [ -n "$extra" ]; then
    echo "exported by $(basename "$lib") but not declared with TS_API in $inc/*.h:"; sed 's/^/  /' <<<"$extra"; fail=1
fi
if [ -n "$missing" ]; then
    echo "declared with TS_API but not exported by $(basename "$lib"):"; sed 's/^/  /' <<<"$missing"; fail=1
fi
echo "test_exports: $(wc -l <<<"$api") declared, $(wc -l <<<"$exported") exported"
exit $fail
