#!/bin/bash
# Builds every dependency of constel-agent as a static musl archive from its pinned Debian
# source package (deps/versions.txt) into one prefix. The result is cached outside the clone,
# keyed by a hash of this recipe, the pinned list and the toolchain, so a second run is a
# cache hit in about a second and a fresh machine still builds everything from nothing.
#
#   deps/build.sh            build (or reuse) and print the prefix path on stdout
#   deps/build.sh --key      print only the cache key
#
# Environment: CONSTEL_CACHE (default /var/cache/constel-agent) holds deps-<key>/.
# The measured recipe behind each step is docs/deps.md.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${CONSTEL_CACHE:-/var/cache/constel-agent}

say() { printf 'deps: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

# The key covers everything that changes the output: this file, the pinned versions, the
# compilers and the kernel headers the musl wrapper exposes.
cache_key() {
	{
		cat "$here/build.sh" "$here/versions.txt" "$here/cryptsetup-foreign-off.c"
		dpkg-query -W -f='${Package} ${Version}\n' musl-dev gcc-12 linux-libc-dev binutils cmake 2>/dev/null
	} | sha256sum | cut -c1-16
}

key=$(cache_key)
if [ "${1:-}" = --key ]; then
	echo "$key"
	exit 0
fi

dest=$cache/deps-$key
mkdir -p "$cache"
# One build at a time per cache: a second caller waits for the first and then hits the cache.
exec 9>"$cache/.lock-$key"
if ! flock -n 9; then
	say "another build of key $key is running; waiting for it"
	flock 9
fi
if [ -f "$dest/.complete" ]; then
	say "cache hit: $dest (key $key), build skipped"
	echo "$dest/prefix"
	exit 0
fi

say "cache miss (key $key): building all dependencies from Debian source into $dest"
t_start=$(date +%s)
work=$(mktemp -d "$cache/build-$key.XXXXXX")
# The prefix is built in place (pkg-config files name it); .complete marks it usable.
rm -rf "$dest"
trap 'rm -rf "$work"; [ -f "$dest/.complete" ] || rm -rf "$dest"' EXIT
TOP=$work
PREFIX=$dest/prefix
SRC=$work/src
LOGS=$work/logs
mkdir -p "$TOP/kinc" "$TOP/bin" "$PREFIX/lib/pkgconfig" "$PREFIX/include" "$SRC" "$LOGS"

# musl-gcc uses -nostdinc; expose only the kernel UAPI headers, never /usr/include itself.
ln -s /usr/include/linux "$TOP/kinc/linux"
ln -s /usr/include/asm-generic "$TOP/kinc/asm-generic"
ln -s /usr/include/x86_64-linux-gnu/asm "$TOP/kinc/asm"
printf '#!/bin/sh\nexec musl-gcc -isystem %s/kinc "$@"\n' "$TOP" >"$TOP/bin/musl-gcc-k"
chmod +x "$TOP/bin/musl-gcc-k"
cat >"$TOP/musl.cmake" <<EOF
set(CMAKE_C_COMPILER $TOP/bin/musl-gcc-k)
set(CMAKE_FIND_ROOT_PATH $PREFIX)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
EOF

export PATH=$TOP/bin:$PATH
export CC=musl-gcc-k AR=ar RANLIB=ranlib
export CPPFLAGS="-I$PREFIX/include"
# No unwind tables (.eh_frame): C code that is never unwound (no C++, no backtraces; the agent
# has no debugger in the initrd) carries ~100 KiB of them otherwise. Not a hardening flag.
export CFLAGS="-Os -ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables -fno-unwind-tables"
export LDFLAGS="-L$PREFIX/lib -static"
export PKG_CONFIG_LIBDIR=$PREFIX/lib/pkgconfig PKG_CONFIG_PATH=
export MAKEFLAGS=-j$(nproc)
export DEB_BUILD_OPTIONS=nocheck
cmake_common="-DCMAKE_TOOLCHAIN_FILE=$TOP/musl.cmake -DCMAKE_BUILD_TYPE=MinSizeRel -DCMAKE_INSTALL_PREFIX=$PREFIX -DCMAKE_INSTALL_LIBDIR=lib"

# The directory apt-get source unpacked a source package into (one per package).
srcdir() {
	local d
	for d in "$SRC/$1"-[0-9]*/; do
		[ -d "$d" ] && { echo "${d%/}"; return 0; }
	done
	die "no unpacked source for $1 in $SRC"
}

fetch_sources() {
	local name pkg ver
	cd "$SRC"
	while read -r name pkg ver; do
		case $name in '' | '#'*) continue ;; esac
		apt-get source -qq "$pkg=$ver" >"$LOGS/fetch-$pkg.log" 2>&1 ||
			{ tail -5 "$LOGS/fetch-$pkg.log" >&2; die "apt-get source $pkg=$ver failed"; }
	done <"$here/versions.txt"
}

build_bearssl() {
	cd "$(srcdir bearssl)"
	printf 'include conf/Unix.mk\nBUILD = build-musl\nCC = musl-gcc-k\nLD = musl-gcc-k\nCFLAGS = -W -Wall %s\nDLL = no\nTOOLS = no\nTESTS = no\n' "$CFLAGS" >conf/musl.mk
	make CONF=musl
	install -d "$PREFIX/include/bearssl"
	install -m644 build-musl/libbearssl.a "$PREFIX/lib/"
	install -m644 inc/*.h "$PREFIX/include/bearssl/"
}

build_nanopb() {
	cd "$(srcdir nanopb)"
	mkdir -p build-musl
	for f in pb_common pb_encode pb_decode; do
		$CC $CPPFLAGS $CFLAGS -I. -c $f.c -o build-musl/$f.o
	done
	ar rcs build-musl/libprotobuf-nanopb.a build-musl/*.o
	install -m644 build-musl/libprotobuf-nanopb.a "$PREFIX/lib/"
	install -d "$PREFIX/include/nanopb" "$PREFIX/src/nanopb"
	install -m644 pb.h pb_common.h pb_encode.h pb_decode.h "$PREFIX/include/nanopb/"
	# The runtime's sources too: the agent, the sanitizer build and the fuzz targets compile
	# them with the project's own PB_* options, which must match the generated code's.
	install -m644 pb.h pb_common.h pb_encode.h pb_decode.h pb_common.c pb_encode.c pb_decode.c \
		"$PREFIX/src/nanopb/"
}

build_json_c() {
	mkdir -p "$(srcdir json-c)/build-musl"
	cd "$(srcdir json-c)/build-musl"
	cmake .. $cmake_common -DBUILD_SHARED_LIBS=OFF -DBUILD_STATIC_LIBS=ON -DBUILD_TESTING=OFF \
		-DDISABLE_WERROR=ON -DDISABLE_EXTRA_LIBS=ON -DENABLE_THREADING=OFF
	make
	make install
}

build_libuuid() {
	cd "$(srcdir util-linux)"
	# A Debian patch touches configure.ac; regenerate once so make does not configure twice.
	autoreconf
	mkdir -p build-musl && cd build-musl
	../configure --prefix="$PREFIX" --libdir="$PREFIX/lib" --disable-shared --enable-static \
		--disable-all-programs --enable-libuuid \
		--disable-nls --disable-asciidoc --disable-bash-completion --disable-pylibmount \
		--disable-makeinstall-chown --disable-makeinstall-setuid --without-python \
		--without-systemd --without-udev --without-selinux --without-audit \
		--without-readline --without-ncursesw --without-ncurses --without-tinfo \
		--without-libz --without-libmagic --without-cap-ng --without-btrfs --without-econf
	make
	make install
}

build_libdm() {
	cd "$(srcdir lvm2)"
	# libdm's device-mapper and sysfs directories are PATH_MAX arrays with an initialiser: 8 KiB
	# of .data in the agent's file for "/dev/mapper" and "/sys/". They become zero arrays (.bss)
	# that a constructor fills before main, so every reader sees the same strings as before.
	local c=libdm/libdm-common.c
	grep -qx 'static char _dm_dir\[PATH_MAX\] = DEV_DIR DM_DIR;' $c &&
		grep -qx 'static char _sysfs_dir\[PATH_MAX\] = "/sys/";' $c ||
		{ echo "$c: the directory arrays are not as expected" >&2; return 1; }
	sed -i -e 's|^static char _dm_dir\[PATH_MAX\] = DEV_DIR DM_DIR;$|static char _dm_dir[PATH_MAX];|' \
		-e 's|^static char _sysfs_dir\[PATH_MAX\] = "/sys/";$|static char _sysfs_dir[PATH_MAX];\
__attribute__((constructor)) static void _constel_dm_dirs(void)\
{\
	strcpy(_dm_dir, DEV_DIR DM_DIR);\
	strcpy(_sysfs_dir, "/sys/");\
}|' $c
	mkdir -p build-musl && cd build-musl
	../configure --prefix="$PREFIX" --libdir="$PREFIX/lib" --with-usrlibdir="$PREFIX/lib" \
		--enable-static_link --with-symvers=no --with-optimisation=-Os \
		--disable-udev_sync --disable-udev_rules --disable-selinux --disable-blkid_wiping \
		--disable-readline --disable-nls --disable-systemd-journal --disable-app-machineid \
		--disable-cmdlib --disable-dmeventd --disable-lvmpolld --disable-use-lvmpolld \
		--disable-use-lvmlockd --enable-pkgconfig
	make -C libdm ioctl/libdevmapper.a libdevmapper.pc
	install -m644 libdm/ioctl/libdevmapper.a "$PREFIX/lib/libdevmapper.a"
	install -m644 ../libdm/libdevmapper.h "$PREFIX/include/libdevmapper.h"
	install -m644 libdm/libdevmapper.pc "$PREFIX/lib/pkgconfig/devmapper.pc"
}

# libnettle for libcryptsetup's crypto backend; libhogweed for the agent's P-256 (agent/base/
# p256.c: 3-4x BearSSL 0.6's ec_p256_m31), on nettle's bundled mini-gmp instead of GMP. hogweed
# is compiled -O2: at -Os gcc turns the carry test of mini-gmp's limb multiply (gmp_umul_ppmm)
# into a branch on the multiplied values, which are secret in a signature; at -O2 it is
# branch-free (checked with objdump) and faster.
build_nettle() {
	cd "$(srcdir nettle)"
	# The fixed-base tables of P-256 (key generation, ECDSA) and Curve25519 (X25519's public
	# key, ed25519): 64 points (Pippenger k=26, c=5: 4 KiB) each instead of nettle's 256
	# (k=11, c=6: 16 KiB): 24 KiB off the agent, for 15 more doublings per multiplication by
	# the base point (docs/size.md measures it).
	sed -i -e 's/\(eccdata$(EXEEXT_FOR_BUILD) secp256r1\) 11 6 /\1 26 5 /' \
		-e 's/\(eccdata$(EXEEXT_FOR_BUILD) curve25519\) 11 6 /\1 26 5 /' Makefile.in
	[ "$(grep -c 'eccdata$(EXEEXT_FOR_BUILD) \(secp256r1\|curve25519\) 26 5 ' Makefile.in)" = 2 ] ||
		die "nettle's Makefile.in: no eccdata rule for secp256r1 or curve25519 to resize"
	mkdir -p build-musl && cd build-musl
	../configure --prefix="$PREFIX" --libdir="$PREFIX/lib" --disable-shared --enable-static \
		--enable-mini-gmp --disable-documentation --disable-openssl --enable-fat
	make libnettle.a nettle.pc hogweed.pc
	make CFLAGS="${CFLAGS/-Os/-O2}" libhogweed.a
	make install-headers install-static install-pkgconfig
	# nettle forces -ggdb3; the debug info is 10 MB and changes nothing linked.
	strip --strip-debug "$PREFIX/lib/libnettle.a" "$PREFIX/lib/libhogweed.a"
}

# Only what the agent uses: LUKS2 (with dm-integrity), its tokens and repair, dm-verity. No
# online reencryption (the agent never starts one; a LUKS2 header in reencryption state then
# refuses to activate), and the foreign formats TCRYPT, BITLK and FVAULT2 replaced by stand-ins
# that fail with -ENOTSUP (cryptsetup-foreign-off.c says why and how that is checked).
build_cryptsetup() {
	cd "$(srcdir cryptsetup)"
	./autogen.sh
	mkdir -p build-musl && cd build-musl
	# configure insists on popt even for the library alone; only the tools would use it.
	../configure --prefix="$PREFIX" --libdir="$PREFIX/lib" --disable-shared --enable-static \
		--disable-cryptsetup --disable-veritysetup --disable-integritysetup \
		--disable-ssh-token --disable-external-tokens --disable-nls --disable-asciidoc \
		--disable-selinux --disable-udev --disable-blkid --disable-pwquality \
		--disable-luks2-reencryption \
		--enable-internal-argon2 --disable-libargon2 --with-crypto_backend=nettle \
		ac_cv_lib_popt_poptConfigFileToString=yes
	make
	make install
	$CC $CPPFLAGS $CFLAGS -Wall -Wextra -Werror -Wmissing-prototypes -I. -I../lib \
		-c "$here/cryptsetup-foreign-off.c" -o foreign-off.o
	local lib=$PREFIX/lib/libcryptsetup.a members m
	members=$(ar t "$lib")
	for m in tcrypt bitlk fvault2; do
		grep -qx "libcryptsetup_la-$m.o" <<<"$members" ||
			{ echo "libcryptsetup.a has no $m member to replace" >&2; return 1; }
	done
	ar d "$lib" libcryptsetup_la-tcrypt.o libcryptsetup_la-bitlk.o libcryptsetup_la-fvault2.o
	ar rs "$lib" foreign-off.o
}

build_nghttp2() {
	mkdir -p "$(srcdir nghttp2)/build-musl"
	cd "$(srcdir nghttp2)/build-musl"
	cmake .. $cmake_common -DENABLE_LIB_ONLY=ON -DENABLE_STATIC_LIB=ON -DENABLE_SHARED_LIB=OFF \
		-DENABLE_DOC=OFF -DENABLE_FAILMALLOC=OFF -DENABLE_THREADS=OFF -DENABLE_HTTP3=OFF \
		-DWITH_LIBXML2=OFF -DWITH_JEMALLOC=OFF -DBUILD_TESTING=OFF
	make
	make install
}

# ESYS without a crypto library of its own: the agent supplies BearSSL callbacks. tcti-device
# is the production TCTI; tcti-swtpm is built too so the agent can run on the host against
# swtpm (linking both needs --allow-multiple-definition for Tss2_Tcti_Info, see deps.md).
build_tpm2_tss() {
	cd "$(srcdir tpm2-tss)"
	./bootstrap
	mkdir -p build-musl && cd build-musl
	../configure --prefix="$PREFIX" --libdir="$PREFIX/lib" --disable-shared --enable-static \
		--enable-esys --with-crypto=none --disable-fapi --disable-policy --enable-nodl \
		--enable-tcti-device --enable-tcti-swtpm --disable-tcti-mssim --disable-tcti-pcap \
		--disable-tcti-libtpms --disable-tcti-cmd --disable-tcti-spi-helper --disable-tcti-spi-ltt2go \
		--disable-tcti-spidev --disable-tcti-spi-ftdi --disable-tcti-i2c-helper --disable-tcti-i2c-ftdi \
		--disable-doxygen-doc --disable-defaultflags --with-maxloglevel=error \
		--with-udevrulesdir="$PREFIX/lib/udev/rules.d" --with-sysusersdir="$PREFIX/lib/sysusers.d" \
		--with-tmpfilesdir="$PREFIX/lib/tmpfiles.d" --with-runstatedir=/run
	make
	make install
}

build_libsodium() {
	cd "$(srcdir libsodium)"
	# The orig tarball has no configure. Not autogen.sh: it would download config.guess.
	autoreconf -fi
	mkdir -p build-musl && cd build-musl
	../configure --prefix="$PREFIX" --libdir="$PREFIX/lib" --disable-shared --enable-static \
		--disable-pie --disable-ssp --without-pthreads
	make
	make install
}

# zlib's CRC-32 tables (9 KiB: the byte table and the braid tables for 8-byte words) and
# inflate's fixed-Huffman tables (2.5 KiB) are computed on first use into .bss instead of being
# stored in the file (DYNAMIC_CRC_TABLE, BUILDFIXED): the same tables, the same speed after the
# first call (a few microseconds once). zlib's CRC tables are made under its own once(); the
# fixed tables are not thread-safe on first use, and nothing here inflates on two threads.
build_zlib() {
	cd "$(srcdir zlib)"
	CFLAGS="$CFLAGS -DDYNAMIC_CRC_TABLE -DBUILDFIXED" ./configure --static --prefix="$PREFIX" --libdir="$PREFIX/lib"
	make libz.a
	make install
}

# mke2fs for the first boot's ext4 on /dev/mapper/state (the Go disk-mapper leaves that to
# systemd-makefs; the agent runs it itself). Only the libraries mke2fs needs and mke2fs,
# with e2fsprogs' own uuid and blkid and nothing from the prefix (CPPFLAGS cleared). It works
# without /etc/mke2fs.conf: the built-in profile knows ext4.
build_e2fsprogs() {
	cd "$(srcdir e2fsprogs)"
	mkdir -p build-musl && cd build-musl
	CPPFLAGS= LDFLAGS="-static -Wl,--gc-sections" ../configure --disable-nls --disable-fuse2fs \
		--disable-elf-shlibs --disable-bsd-shlibs --disable-uuidd --disable-defrag \
		--disable-imager --disable-debugfs --disable-e2initrd-helper --disable-tdb \
		--disable-backtrace --disable-fsck --without-libarchive --enable-libuuid \
		--enable-libblkid --disable-tls
	make libs
	make -C misc mke2fs
	install -d "$PREFIX/sbin"
	strip -o "$PREFIX/sbin/mke2fs" misc/mke2fs
}

# Run one step with its output in a log; on failure show the log's tail and fail the build.
# The step runs in a subshell that is not part of an if, && or || list: bash ignores set -e
# inside those, and a failing configure would go unnoticed.
step() {
	local name=$1 t0 rc
	t0=$(date +%s)
	set +e
	(
		set -e
		"build_${name//-/_}"
	) >"$LOGS/$name.log" 2>&1
	rc=$?
	set -e
	if [ $rc != 0 ]; then
		tail -30 "$LOGS/$name.log" >&2
		say "$name: build failed (exit $rc; the log's last lines are above)"
		exit 1
	fi
	say "$name: built in $(($(date +%s) - t0)) s"
}

# Steps one after another; the first failure ends the chain with a non-zero status.
chain() {
	local n
	for n in "$@"; do
		step "$n"
	done
}

say "fetching pinned Debian source packages (apt verifies each against the signed archive)"
fetch_sources
say "sources fetched in $(($(date +%s) - t_start)) s"

# Two independent chains keep both cores busy through the single-threaded configure scripts.
chain json-c libuuid libdm nettle cryptsetup &
chain_a=$!
chain tpm2-tss bearssl nghttp2 libsodium zlib nanopb e2fsprogs &
chain_b=$!
rc=0
wait $chain_a || rc=1
wait $chain_b || rc=1
[ $rc = 0 ] || die "dependency build failed"

# Record what was built, for --version and for anyone auditing the prefix.
grep -v '^#' "$here/versions.txt" | awk 'NF == 3' >"$PREFIX/versions.txt"
touch "$dest/.complete"
say "built all dependencies in $(($(date +%s) - t_start)) s into $dest"
echo "$dest/prefix"
