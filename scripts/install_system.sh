#!/bin/sh
# Install the Debian packages platobench's offline data comes from:
#   openclipart-png openclipart-svg  paired image-caption demo data (openclipart-* datasets)
#   dataset-fashion-mnist            zero-shot class demo data (fashion-mnist)
#   tuxpaint-stamps-default          cartoon stamps with English captions, GPL-2 (tuxpaint, tuxpaint-categories)
#   wordnet-base                     WordNet 3.0 glosses of ImageNet classes (imagenet-100 descriptions; wordnet corpus)
#   unicode-cldr-core                Unicode CLDR English emoji annotations (cldr-emoji corpus)
#   sword-text-kjv                   King James Version Bible, SWORD module (kjv-web corpus)
#   sword-text-web                   World English Bible, SWORD module (kjv-web corpus)
#   chromium                         headless browser for the leaderboard's HTML checks
# Runs `apt-get update` once, then installs what is missing, when run as root with apt-get present;
# otherwise prints the one command to run. Usage: sh scripts/install_system.sh
set -eu
PACKAGES="openclipart-png openclipart-svg dataset-fashion-mnist tuxpaint-stamps-default wordnet-base unicode-cldr-core sword-text-kjv sword-text-web chromium"

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done
if [ -z "$missing" ]; then
    echo "system packages: all installed ($PACKAGES)"
    exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    # shellcheck disable=SC2086
    apt-get install -y --no-install-recommends $missing
else
    echo "platobench needs these Debian packages:$missing"
    echo "run: sudo apt-get update && sudo apt-get install -y --no-install-recommends$missing"
fi
