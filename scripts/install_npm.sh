#!/bin/sh
# Fetch the npm tarballs platobench's offline text corpora read (never unpacked; read with tarfile):
#   openmoji@17.0.0  emoji annotations and tags, CC-BY-SA-4.0 (openmoji corpus)
# into ${PLATOBENCH_HOME:-$HOME/.cache/platobench}/npm/, skipping a tarball already there; without npm
# it prints the command to run. Usage: sh scripts/install_npm.sh
set -eu
DEST="${PLATOBENCH_HOME:-$HOME/.cache/platobench}/npm"
PACKAGES="openmoji@17.0.0"

for spec in $PACKAGES; do
    tarball="$DEST/$(echo "$spec" | sed 's/@/-/').tgz"
    if [ -f "$tarball" ]; then
        echo "npm: $tarball present"
        continue
    fi
    if ! command -v npm >/dev/null 2>&1; then
        echo "platobench needs npm to fetch $spec; run: mkdir -p \"$DEST\" && npm pack $spec --pack-destination \"$DEST\""
        continue
    fi
    mkdir -p "$DEST"
    npm pack --quiet "$spec" --pack-destination "$DEST"
done
