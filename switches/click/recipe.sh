# Click for kernel interfaces (switches/build.sh sources this: its recipe_click
# builds in $work and installs into $out; the stamp covers the function's text).

# Click's userlevel driver with every element built in (no dynamic
# linking), no tools; only the `click` program is installed (it needs no
# other file at run time).
recipe_click() {
	(cd "$work" && ./configure --disable-linuxmodule --enable-tools=no --enable-etherswitch \
		--disable-dynamic-linking)
	make -C "$work" -j"$jobs"
	install -D -m 755 "$work/userlevel/click" "$out/bin/click"
	strip "$out/bin/click"
}
