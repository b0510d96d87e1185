# Snabb (switches/build.sh sources this: its recipe_snabb builds in $work and
# installs into $out; the stamp covers the function's text).

recipe_snabb() {
	make -C "$work" -j"$jobs"
	install -D -m 755 "$work/src/snabb" "$out/bin/snabb"
}
